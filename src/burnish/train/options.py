"""Everything a `LearnerBuilder` collects, handed to the `Learner` in one frozen object."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnish.train.accumulation import LrStep
from burnish.train.checkpoint.resume import ResumeFrom
from burnish.train.interrupter import Interrupter
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.gradient_checkpointing import BlockSelector
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.early_stopping import EarlyStoppingStrategy
    from burnish.train.ema import EmaSettings
    from burnish.train.listener import TrainingListener
    from burnish.train.logger import ApplicationLoggerInstaller, MetricLogger
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.metric.base import Metric
    from burnish.train.non_finite import NonFiniteMode
    from burnish.train.preemption import PreemptionSettings
    from burnish.train.renderer.base import MetricsRenderer

__all__ = ["LearnerOptions"]


@dataclasses.dataclass(frozen=True)
class LearnerOptions:
    """The learner's settings; built by `LearnerBuilder`, not by users.

    What a run needs besides these (renderer and loggers of ranks other than 0, the metric
    processor, the data adapters, the training state) is built anew by each `fit`.

    Attributes:
        artifact_dir: where logs and checkpoints go.
        num_epochs: epochs to train (1-based, inclusive); None only with `max_iterations`:
            then as many epochs as the step budget needs (see budget.py).
        metrics: the metrics of each split.
        loggers: the metric logger of each split; None: Burn's file logs in `artifact_dir`.
        renderer: the dashboard; None: the default one for the terminal.
        interrupter: receives stop requests.
        checkpointer: writes checkpoint directories; None: no checkpoints.
        checkpointing_strategy: which epoch checkpoints to keep.
        resume_from: the checkpoint to start from, None for a fresh start.
        early_stopping: when to stop before `num_epochs`.
        grads_accumulation: iterations per optimizer step; None: every iteration.
        lr_step: when the scheduler advances: each `"iteration"` (Burn's learner) or each
            `"optimizer_step"` (once per group of accumulated iterations).
        device: the device to train on; None: where the model and loaders already are.
        application_logger: installs the experiment log for the run; None: logging untouched.
        summary: print the LearnerSummary at the end.
        checkpoint_every: also checkpoint every this many training iterations.
        deterministic: use torch's deterministic algorithms during `fit`.
        compile: `torch.compile` options for the model's forward, None: eager.
        compile_step: whether `compile` applies to the whole train step (forward, backward and
            optimizer step as one graph) instead of the forward.
        mixed_precision: the half type the steps run in under autocast, None: float32.
        strategy: how the model is spread over several ranks: `"ddp"` (replicated, gradients
            averaged) or `"fsdp"` (sharded with FSDP2).
        shard_policy: under `"fsdp"`, which submodules are sharded as units (None: each
            direct child module with parameters).
        trackers: experiment loggers that also get the run (rank 0).
        tracker_config: the config the trackers record as parameters.
        log_every: the trackers get iteration values every this many global training steps
            (and validation iterations).
        listeners: user code called at the run's moments (`with_listener`), in order.
        ema: the exponential moving average of the weights to keep, None: none.
        on_non_finite: what a non-finite loss or gradient does: `"continue"`, `"skip"` or
            `"stop"` (see non_finite.py).
        max_iterations: the step budget: training ends after this many optimizer steps,
            None: after `num_epochs`.
        valid_every: also validate every this many optimizer steps, inside the epochs (each
            validation is then its own `valid/epoch-N`, N counting validations); None: at
            each epoch's end only.
        preemption: the signals that preempt the run (SIGTERM by default) and what it does
            then (see preemption.py); None: SIGTERM, no requeue, exit code 143.
        gradient_checkpointing: checkpoint the model's blocks during `fit` (activations
            recomputed in the backward pass).
        checkpoint_blocks: which blocks (see `burnish.checkpoint_blocks`).
        needs_validation: the settings given that need a validation split, one phrase each
            (train_only.py): a fit without a validation loader refuses them.
    """

    artifact_dir: Path
    num_epochs: int | None
    metrics: Mapping[Split, tuple[Metric, ...]]
    checkpointing_strategy: CheckpointingStrategy
    interrupter: Interrupter = dataclasses.field(default_factory=Interrupter)
    loggers: Mapping[Split, MetricLogger] | None = None
    renderer: MetricsRenderer | None = None
    checkpointer: FileCheckpointer | None = None
    resume_from: int | ResumeFrom | None = None
    early_stopping: EarlyStoppingStrategy | None = None
    grads_accumulation: int | None = None
    lr_step: LrStep = "iteration"
    device: torch.device | None = None
    application_logger: ApplicationLoggerInstaller | None = None
    summary: bool = False
    checkpoint_every: int | None = None
    deterministic: bool = False
    compile: Mapping[str, Any] | None = None
    compile_step: bool = False
    mixed_precision: torch.dtype | None = None
    strategy: str = "ddp"
    shard_policy: Callable[[nn.Module], bool] | None = None
    trackers: tuple[ExperimentLogger, ...] = ()
    tracker_config: Any = None
    log_every: int = 50
    listeners: tuple[TrainingListener, ...] = ()
    ema: EmaSettings | None = None
    on_non_finite: NonFiniteMode = "continue"
    max_iterations: int | None = None
    valid_every: int | None = None
    preemption: PreemptionSettings | None = None
    gradient_checkpointing: bool = False
    checkpoint_blocks: BlockSelector = None
    needs_validation: tuple[str, ...] = ()

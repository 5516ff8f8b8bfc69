"""Everything a `LearnerBuilder` collects, handed to the `Learner` in one frozen object."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from burnish.train.settings.checkpointing import CheckpointingOptions
from burnish.train.settings.compilation import CompilationOptions
from burnish.train.settings.logs import LoggingOptions
from burnish.train.settings.optimization import OptimizationOptions
from burnish.train.settings.parallelism import ParallelismOptions
from burnish.train.settings.precision import PrecisionOptions
from burnish.train.settings.recompute import RecomputeOptions
from burnish.train.settings.stopping import StoppingOptions
from burnish.train.settings.tracking import TrackingOptions
from burnish.train.settings.validation import ValidationOptions
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.storage import RemoteArtifactDir
    from burnish.train.components.listener import TrainingListener
    from burnish.train.metric.base import Metric

__all__ = ["LearnerOptions"]


def _no_metrics() -> Mapping[Split, tuple[Metric, ...]]:
    return {Split.TRAIN: (), Split.VALID: ()}


@dataclasses.dataclass(frozen=True)
class LearnerOptions:
    """The learner's settings, one frozen group per concern; held by `TrainingBuilder`, whose
    setters each replace a field, and resolved by its build (settings/resolve.py).

    What a run needs besides these (renderer and loggers of ranks other than 0, the metric
    processor, the data adapters, the training state) is built anew by each `fit`.

    Attributes:
        artifact_dir: where logs and checkpoints go (for a URL: its local staging directory).
        metrics: the metrics of each split (once built, with those the settings add).
        listeners: user code called at the run's moments (`with_listener`), in order.
        stopping: when the run ends (epochs, step budget, early stopping, stop requests,
            preemption).
        validation: when the run validates.
        checkpointing: what is checkpointed, how often, what is kept, where the run starts.
        optimization: how optimizer steps are made (accumulation, non-finite steps, EMA).
        precision: the number types and algorithms (mixed precision, determinism).
        compilation: what `torch.compile` compiles.
        recompute: the blocks whose activations are recomputed (gradient checkpointing).
        parallelism: the device, and how the model is spread over the ranks.
        logging: metric loggers, renderer, experiment log, summary.
        tracking: the experiment trackers.
        storage: the object storage `artifact_dir` is mirrored to (a URL was given), or None.
    """

    artifact_dir: Path
    metrics: Mapping[Split, tuple[Metric, ...]] = dataclasses.field(default_factory=_no_metrics)
    listeners: tuple[TrainingListener, ...] = ()
    stopping: StoppingOptions = dataclasses.field(default_factory=StoppingOptions)
    validation: ValidationOptions = dataclasses.field(default_factory=ValidationOptions)
    checkpointing: CheckpointingOptions = dataclasses.field(default_factory=CheckpointingOptions)
    optimization: OptimizationOptions = dataclasses.field(default_factory=OptimizationOptions)
    precision: PrecisionOptions = dataclasses.field(default_factory=PrecisionOptions)
    compilation: CompilationOptions = dataclasses.field(default_factory=CompilationOptions)
    recompute: RecomputeOptions = dataclasses.field(default_factory=RecomputeOptions)
    parallelism: ParallelismOptions = dataclasses.field(default_factory=ParallelismOptions)
    logging: LoggingOptions = dataclasses.field(default_factory=LoggingOptions)
    tracking: TrackingOptions = dataclasses.field(default_factory=TrackingOptions)
    storage: RemoteArtifactDir | None = None

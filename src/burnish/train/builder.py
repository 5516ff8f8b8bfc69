"""`TrainingBuilder`: every setting of a training run, held once for both of Burn's entry
points, `LearnerBuilder` (learner_builder.py, the book's `build`) and `SupervisedTraining`
(supervised.py, Burn main's `launch`)."""

from __future__ import annotations

import copy
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from burnish.backend import check_device
from burnish.backend import device as parse_device
from burnish.train.accumulation import LR_STEPS, LrStep
from burnish.train.checkpoint.resume import ResumeFrom
from burnish.train.interrupter import Interrupter
from burnish.train.logger.progress import TrainingProgressLogger, check_progress_logger
from burnish.train.options import LearnerOptions
from burnish.train.run_metrics import (
    check_ema_and_non_finite,
    check_watched_metrics,
    run_metrics,
)
from burnish.train.split import Split
from burnish.train.tracking import DEFAULT_LOG_EVERY
from burnish.train.train_only import validation_settings
from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.gradient_checkpointing import BlockSelector
    from burnish.optim import Optimizer
    from burnish.record.base import FileRecorder
    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.early_stopping import EarlyStoppingStrategy
    from burnish.train.ema import EmaBuffers, EmaSettings, EmaValidate
    from burnish.train.execution_strategy import (
        ExecutionStrategy,
        SupervisedLearningStrategy,
        TrainingStrategy,
    )
    from burnish.train.listener import TrainingListener
    from burnish.train.logger import ApplicationLoggerInstaller, MetricLogger
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.metric.base import Metric
    from burnish.train.non_finite import NonFiniteMode
    from burnish.train.preemption import PreemptionSettings
    from burnish.train.renderer.base import MetricsRenderer

_DEFAULT: Literal["default"] = "default"

__all__ = ["TrainingBuilder"]


class TrainingBuilder(ValueBuilder):
    """The settings `LearnerBuilder` and `SupervisedTraining` share, written once.

    Every method returns a new builder and leaves this one as it was (Burn's builders are
    consumed by each call), so one builder can seed several runs. The methods are Burn's
    (metrics, epochs, devices, checkpoints, early stopping, renderer, loggers), plus
    burnish's `resume`, `checkpoint_every`, `deterministic`, `mixed_precision`, `compile`,
    `strategy`, `log_to`, `log_every`, `max_iterations` and `valid_every`. Settings are
    checked when given or when the learner is built; nothing runs until training starts.

    Args:
        artifact_dir: where `experiment.log`, metric logs (`train/`, `valid/`) and
            `checkpoint/` are written.
    """

    def __init__(self, artifact_dir: str | os.PathLike) -> None:
        self._artifact_dir = Path(artifact_dir)
        self._metrics: dict[Split, list[Metric]] = {Split.TRAIN: [], Split.VALID: []}
        self._num_epochs: int | None = None  # 1, or what `max_iterations` needs
        self._interrupter = Interrupter()
        self._recorder: FileRecorder | None = None
        self._checkpointers: tuple[Any, Any, Any] | None = None  # Burn-trait checkpointers
        self._strategy: CheckpointingStrategy | None = None
        self._resume_from: int | ResumeFrom | None = None
        self._early_stopping: EarlyStoppingStrategy | None = None
        self._grads_accumulation: int | None = None
        self._lr_step: LrStep = "iteration"
        self._device: torch.device | None = None
        self._renderer: MetricsRenderer | Any = None
        self._progress_logger: TrainingProgressLogger | Any = None
        self._loggers: dict[Split, MetricLogger] | None = None
        self._application_logger: ApplicationLoggerInstaller | Literal["default"] | None = _DEFAULT
        self._summary = False
        self._checkpoint_every: int | None = None
        self._deterministic = False
        self._compile: dict[str, Any] | None = None
        self._compile_step = False
        self._mixed_precision: torch.dtype | None = None
        self._strategy_name = "ddp"
        self._shard_policy: Callable[[nn.Module], bool] | None = None
        self._trackers: list[ExperimentLogger] = []
        self._tracker_config: Any = None
        self._log_every = DEFAULT_LOG_EVERY
        self._listeners: list[TrainingListener] = []
        self._ema: EmaSettings | None = None
        self._on_non_finite: NonFiniteMode = "continue"
        self._max_iterations: int | None = None
        self._valid_every: int | None = None
        self._preemption: PreemptionSettings | None = None
        self._execution: ExecutionStrategy | None = None
        self._custom_strategy: SupervisedLearningStrategy | None = None
        self._gradient_checkpointing = False
        self._checkpoint_blocks: BlockSelector = None

    # -- metrics ---------------------------------------------------------------------------

    def metric_train_numeric(self, metric: Metric) -> Self:
        """Register a numeric training metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric(Split.TRAIN, metric, numeric=True)

    def metric_valid_numeric(self, metric: Metric) -> Self:
        """Register a numeric validation metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric(Split.VALID, metric, numeric=True)

    def metric_train(self, metric: Metric) -> Self:
        """Register a training metric shown as text in the dashboard and logged as text."""
        return self._add_metric(Split.TRAIN, metric, numeric=False)

    def metric_valid(self, metric: Metric) -> Self:
        """Register a validation metric shown as text in the dashboard and logged as text."""
        return self._add_metric(Split.VALID, metric, numeric=False)

    def metrics(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register numeric metrics on both splits at once (Burn: `.metrics((a, b, c))`).

        Burn's one tuple (`.metrics((AccuracyMetric(), LossMetric()))`) or a list works as the
        metrics given one by one (`.metrics(AccuracyMetric(), LossMetric())`).

        Each metric is logged per epoch and plotted in the dashboard for training and
        validation; the validation split gets its own copy, so the two never share a state.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> from burnish.train.metric import AccuracyMetric, LossMetric
            >>> builder = LearnerBuilder("artifacts").metrics(AccuracyMetric(), LossMetric())
        """
        from burnish.train.metric.base import Numeric
        from burnish.train.metric_args import metrics_of

        flat: tuple[Metric, ...] = metrics_of(metrics)
        for metric in flat:
            if not isinstance(metric, Numeric):
                raise TypeError(
                    f"`metrics` takes Numeric metrics; {type(metric).__name__} is not one. "
                    "Register it with `metrics_text(...)` instead."
                )
        new = self._replace()
        for metric in flat:
            new._append_metric(Split.TRAIN, metric, numeric=True)
            new._append_metric(Split.VALID, copy.deepcopy(metric), numeric=True)
        return new

    def metrics_text(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register text metrics on both splits at once (Burn: `.metrics_text((a, b))`; a
        tuple or list, or the metrics one by one)."""
        from burnish.train.metric_args import metrics_of

        new = self._replace()
        for metric in metrics_of(metrics):
            new._append_metric(Split.TRAIN, metric, numeric=False)
            new._append_metric(Split.VALID, copy.deepcopy(metric), numeric=False)
        return new

    def _add_metric(self, split: Split, metric: Metric, numeric: bool) -> Self:
        new = self._replace()
        new._append_metric(split, metric, numeric)
        return new

    def _append_metric(self, split: Split, metric: Metric, numeric: bool) -> None:
        """Append to this builder's own list: only on a copy made by `_replace`."""
        from burnish.train.metric.base import Metric, Numeric

        if not isinstance(metric, Metric):
            raise TypeError(
                f"Metrics must implement burnish.train.metric.Metric. Received: {metric!r}."
            )
        if numeric and not isinstance(metric, Numeric):
            raise TypeError(
                f"`metric_{split}_numeric` takes a Numeric metric; {type(metric).__name__} is "
                f"not one. Register it with `metric_{split}(...)` instead."
            )
        if any(m.name == metric.name for m in self._metrics[split]):
            raise ValueError(
                f"A {split} metric named {metric.name!r} is already registered; each name "
                "is a log file, so register each metric once per split."
            )
        self._metrics[split].append(metric)
        for companion in metric.companions():  # e.g. ThroughputMetric's MFU
            self._append_metric(split, companion, numeric)

    # -- loop ------------------------------------------------------------------------------

    def num_epochs(self, num_epochs: int) -> Self:
        """How many epochs to train (1-based, inclusive); default 1.

        With `max_iterations(n)` it is an upper bound: the run ends at whichever comes first.
        """
        _require_positive("num_epochs", num_epochs)
        return self._replace(_num_epochs=num_epochs)

    def max_iterations(self, iterations: int) -> Self:
        """End training after `iterations` optimizer steps, in whatever epoch (a step budget).

        Steps are counted over the whole run (a resume continues the count) and are optimizer
        steps: with `grads_accumulation(k)`, `k` batches make one. The epoch the budget ends is
        cut short and closed as any epoch is: its validation, early stopping's decision, the
        epoch checkpoint (recording the end: `resume()` then trains nothing) and the summary.
        A learning-rate schedule of `iterations` steps (with `lr_step="optimizer_step"` under
        accumulation) ends exactly there.

        `num_epochs` becomes an upper bound; left unset, it is as many epochs as the budget
        needs (`ceil(iterations * accumulation / batches per epoch)`), so the budget ends the
        run. Raising the budget of an ended run and calling `resume()` continues with the next
        epoch. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").max_iterations(10_000).valid_every(1_000)
        """
        _require_positive("max_iterations", iterations)
        return self._replace(_max_iterations=iterations)

    def valid_every(self, iterations: int) -> Self:
        """Also validate every `iterations` optimizer steps, inside the epochs.

        A validation runs when the run's optimizer step count (see `max_iterations`) is a
        multiple of `iterations`, and at each epoch's end as always (once, when both fall on
        the same step). Each validation is logged as its own `valid/epoch-N` directory (Burn's
        layout; N counts validations, `valid/validations.json` says where each one was taken),
        and checkpointing strategies and early stopping decide after every validation: their
        epochs are then validations (`no_improvement_since(n_epochs=3)`: 3 validations), and
        they must watch valid metrics. A validation restores `model.train()` and leaves the
        random generators as they were, so training goes on exactly as without it.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").valid_every(500)
        """
        _require_positive("valid_every", iterations)
        return self._replace(_valid_every=iterations)

    def devices(self, devices: Sequence[torch.device | str]) -> Self:
        """The device to train on (one per process); `fit` moves the model and data there."""
        if isinstance(devices, (str, torch.device)):
            raise TypeError(
                "`devices` takes a list of devices, as Burn's `devices(vec![device])`. "
                f"Received: {devices!r}. Write `.devices([{str(devices)!r}])`."
            )
        if not devices:
            raise ValueError("`devices` must name at least one device. Received: [].")
        if len(devices) > 1:
            raise ValueError(
                f"Training on several devices ({len(devices)} given) runs one process per "
                "device under torch.distributed: launch the script with "
                "`torchrun --nproc_per_node=N` and pass one device per process."
            )
        return self._replace(_device=parse_device(devices[0]), _execution=None)

    def with_training_strategy(self, strategy: TrainingStrategy | ExecutionStrategy) -> Self:
        """Where and how to train (Burn main: `with_training_strategy(strategy.into())`).

        `ExecutionStrategy.single(device)` is `devices([device])`; `ExecutionStrategy.ddp(
        devices)` (or `multi(devices)`) trains one process per device under `torchrun
        --nproc_per_node=len(devices)`, rank `LOCAL_RANK` on `devices[LOCAL_RANK]`, gradients
        averaged; `multi(devices, MultiDeviceOptim.OPTIM_SHARDED)` shards with FSDP2;
        `TrainingStrategy.custom(strategy)` runs your `SupervisedLearningStrategy` (with
        `SupervisedTraining.launch`). The last of this and `devices` wins.

        Example:
            >>> from burnish.train import ExecutionStrategy, SupervisedTraining
            >>> training = SupervisedTraining("artifacts", [], []).with_training_strategy(
            ...     ExecutionStrategy.single("cpu"))

        Raises:
            TypeError: for anything else.
        """
        from burnish.train.execution_strategy import as_training_strategy

        training = as_training_strategy(strategy)
        if training.execution is None:
            return self._replace(_custom_strategy=training.custom_strategy)
        return self._replace(
            _custom_strategy=training.custom_strategy, _execution=training.execution, _device=None
        )

    def gradient_checkpointing(self, blocks: BlockSelector = None) -> Self:
        """Recompute the activations of the model's blocks in the backward pass (less memory,
        one more forward pass per block), as Burn main's `gradient_checkpointing()`.

        During `fit` the model's blocks run under `torch.utils.checkpoint` (non-reentrant);
        the gradients are the same. `blocks` picks them as `burnish.checkpoint_blocks` does:
        None for the modules of each `nn.ModuleList` (a transformer's layers), a module class
        or tuple of classes, or a predicate. See docs/performance.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").gradient_checkpointing()
        """
        from burnish.gradient_checkpointing import _predicate

        _predicate(blocks)  # a wrong selector fails here, not in `fit`
        return self._replace(_gradient_checkpointing=True, _checkpoint_blocks=blocks)

    def grads_accumulation(self, accumulation: int, lr_step: LrStep = "iteration") -> Self:
        """Step the optimizer once every `accumulation` iterations with summed gradients.

        Args:
            accumulation: iterations (batches) per optimizer step.
            lr_step: when the learning-rate scheduler advances. `"iteration"` (the default,
                as Burn's learner): once per batch, so a schedule of `num_iters` lasts
                `num_iters` batches, `num_iters / accumulation` optimizer steps.
                `"optimizer_step"`: once per optimizer step (the rate of a group's first
                iteration is used for the whole group), for a schedule built in optimizer
                steps, as `torch.optim.lr_scheduler` loops and Hugging Face's Trainer count.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts")
            >>> builder = builder.grads_accumulation(4, lr_step="optimizer_step")
        """
        _require_positive("grads_accumulation", accumulation)
        if lr_step not in LR_STEPS:
            raise ValueError(
                "`lr_step` must be 'iteration' (the scheduler advances every batch, as Burn's "
                "learner) or 'optimizer_step' (once per optimizer step). Received: "
                f"lr_step={lr_step!r}."
            )
        return self._replace(_grads_accumulation=accumulation, _lr_step=lr_step)

    def interrupter(self) -> Interrupter:
        """The interrupter of this run: call `.stop()` on it to stop after the current step."""
        return self._interrupter

    def with_interrupter(self, interrupter: Interrupter) -> Self:
        """Use a given interrupter (e.g. shared with a UI)."""
        return self._replace(_interrupter=interrupter)

    def early_stopping(self, strategy: EarlyStoppingStrategy) -> Self:
        """Stop when `strategy.should_stop(epoch, store)` says so (after each epoch)."""
        return self._replace(_early_stopping=strategy)

    def deterministic(self, enabled: bool = True) -> Self:
        """Use torch's deterministic algorithms during `fit` (with `bn.seed`: repeatable runs)."""
        if enabled:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        return self._replace(_deterministic=enabled)

    def compile(self, *, step: bool = False, **options: Any) -> Self:
        """Run the model through `torch.compile(**options)` during `fit`.

        By default the model's `forward` is compiled; `bn.backward` and the optimizer step
        stay eager. With `step=True` the whole train step is one graph: `train_step` (forward
        and `bn.backward`) and the optimizer step, the learning rate entering as a device
        tensor (a new value never recompiles); validation stays eager. On CUDA,
        `compile(step=True, mode="reduce-overhead")` replays that graph as a CUDA graph, torch
        copying each batch into its static input buffers: one launch per iteration instead of
        one per kernel. `fullgraph=True` and `dynamic=False` are the defaults of that path, so
        a batch of another shape (the last, partial one) compiles a second graph, once, and
        anything the graph cannot hold is an error rather than a silent slow step.

        Compiling pays when shapes are static, the run is long enough to repay the compile
        time spent up front (seconds to minutes), and the step is bound by kernel launches
        (small models on a GPU); on a CPU, or a short run, eager is usually faster. Results
        match eager execution within float tolerance. See docs/performance.md.

        Example:
            >>> builder.compile(step=True, mode="reduce-overhead")  # doctest: +SKIP

        Args:
            step: compile the whole train step instead of the forward. Needs an `Sgd`, `Adam`
                or `AdamW` optimizer and one process, and works without gradient accumulation
                and float16 loss scaling (bfloat16 works); `build` refuses the rest.
            **options: keyword arguments of `torch.compile` (`mode`, `backend`, ...).
        """
        return self._replace(_compile=dict(options), _compile_step=step)

    def mixed_precision(self, precision: str | torch.dtype) -> Self:
        """Run `train_step` and `valid_step` under `torch.autocast` in a half type.

        Parameters, gradients, optimizer state and checkpoints stay float32. With float16,
        `bn.backward(loss)` inside `train_step` differentiates the loss times a dynamic scale
        (`burnish.optim.GradScaler`); the learner unscales the gradients before clipping and
        the optimizer step, skips a step whose gradients hold inf/NaN and lowers the scale.
        The scaler's state is checkpointed. See docs/mixed-precision.md.

        Args:
            precision: `"bf16"` or `"fp16"` (or `torch.bfloat16` / `torch.float16`).

        Raises:
            ValueError: for any other precision.
        """
        from burnish.train.precision import parse_precision

        return self._replace(_mixed_precision=parse_precision(precision))

    def strategy(
        self, name: str, *, shard_policy: Callable[[nn.Module], bool] | None = None
    ) -> Self:
        """How the model is spread over the ranks under torchrun (alone, it trains as is).

        `"ddp"` (the default): every rank holds the whole model; gradients are averaged in
        buckets launched during the backward pass. `"fsdp"`: PyTorch's FSDP2 shards every
        parameter, gradient and optimizer state over the ranks (`fully_shard` on each unit the
        policy picks, then on the model); checkpoints still hold the whole model, gathered on
        rank 0. See docs/distributed.md.

        Args:
            name: `"ddp"` or `"fsdp"`.
            shard_policy: with `"fsdp"`, `policy(submodule) -> bool` picks the submodules
                sharded as units (e.g. `lambda m: isinstance(m, Block)`); default: each
                direct child module that has parameters.

        Raises:
            ValueError: for another name, or a policy with `"ddp"`.
        """
        if name not in ("ddp", "fsdp"):
            raise ValueError(f"`strategy` must be 'ddp' or 'fsdp'. Received: strategy={name!r}.")
        if shard_policy is not None and name != "fsdp":
            raise ValueError(
                "`shard_policy` picks FSDP units, so it needs strategy('fsdp'). Received: "
                f"strategy={name!r} with a shard_policy."
            )
        return self._replace(_strategy_name=name, _shard_policy=shard_policy)

    def with_ema(
        self,
        decay: float,
        *,
        warmup: bool = False,
        warmup_power: float = 2 / 3,
        update_every: int = 1,
        buffers: EmaBuffers = "average",
        validate: EmaValidate = "ema",
    ) -> Self:
        """Keep an exponential moving average (EMA) of the weights while training.

        After every `update_every`-th optimizer step, `ema = decay * ema + (1 - decay) * model`
        for each parameter and floating-point buffer, in one multi-tensor kernel on the
        model's device (no host sync). Validation runs on the average unless `validate` says
        otherwise; `TrainingResult.ema` is the averaged model; every checkpoint holds the
        average and `resume()` continues it exactly. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").with_ema(0.999, validate="both")

        Args:
            decay: the weight of the old average at each update, in [0, 1) (0.999 and
                0.9999 are usual; the average spans about `1 / (1 - decay)` updates).
            warmup: start with a smaller decay that grows to `decay`, as timm's `ModelEmaV3`:
                `min(decay, 1 - n ** -warmup_power)` at the n-th update.
            warmup_power: the warm-up's power (2/3: decay 0.999 after ~31.6k updates; 3/4:
                after ~10k).
            update_every: average after every this many optimizer steps (cheaper; the decay
                is per update).
            buffers: `"average"` floating-point buffers (BatchNorm statistics) like the
                parameters, or `"copy"` the model's. Integer buffers are always copied.
            validate: `"ema"` (validate the average), `"model"` (the trained weights) or
                `"both"`: the metrics on the average, and a `Raw <name>` twin of each numeric
                validation metric on the trained weights, logged beside it.

        Raises:
            ValueError: for a decay outside [0, 1) or another unknown value; at `build`,
                with `strategy("fsdp")`.
        """
        from burnish.train.ema import EmaSettings

        ema = EmaSettings(decay, warmup, warmup_power, update_every, buffers, validate)
        return self._replace(_ema=ema)

    def on_non_finite(self, mode: NonFiniteMode) -> Self:
        """What an inf or NaN loss or gradient does to the run.

        Whatever the mode, the first non-finite training loss read back is said once on the
        console and in `experiment.log`, with its epoch and iteration. The losses come back
        with the metrics' batched read-back: no extra host sync.

        Args:
            mode: `"continue"` (the default, Burn's): train on. `"skip"`: an optimizer step
                whose gradients hold an inf or a NaN is skipped on the device (the fused
                found-inf check of the float16 loss scaler), and the train split's
                `Skipped Steps` metric counts them. `"stop"`: steps are guarded as with
                `"skip"`, and the run ends at the next read-back that shows a non-finite loss
                or a skipped step, writing no further checkpoint; the message names the last
                committed checkpoint, which `resume()` continues from.

        Raises:
            ValueError: for another mode; at `build`, `"skip"`/`"stop"` with
                `strategy("fsdp")` or `compile(step=True)`.
        """
        from burnish.train.non_finite import check_non_finite_mode

        return self._replace(_on_non_finite=check_non_finite_mode(mode))

    # -- checkpoints -----------------------------------------------------------------------

    def with_file_checkpointer(self, recorder: FileRecorder) -> Self:
        """Save model, optimizer, scheduler and loop state under `checkpoint/` each epoch."""
        return self._replace(_recorder=recorder, _checkpointers=None)

    def with_default_checkpointers(self) -> Self:
        """Burn main's default checkpoints: model, optimizer, scheduler (and the loop's state)
        as Burnpack files (`BurnpackFileRecorder`), under `checkpoint/` as
        `with_file_checkpointer` writes them: committed atomically, resumed exactly."""
        from burnish.record.store.recorder import BurnpackFileRecorder

        return self._replace(_recorder=BurnpackFileRecorder(), _checkpointers=None)

    def with_custom_checkpointers(self, model: Any, optim: Any, scheduler: Any) -> Self:
        """Burn main's `with_custom_checkpointers(model, optim, scheduler)`.

        Three checkpointers written to Burn's `Checkpointer` trait (`save(epoch, record)`,
        `delete(epoch)`, `restore(epoch)`): each epoch checkpoint's model, optimizer and
        scheduler records go to them, the loop's own state to burnish's committed directory
        (see `CustomCheckpointers`). Or three recorders: one per part of burnish's checkpoint
        (the EMA weights use `model`'s), still one atomic commit.

        Raises:
            TypeError: if the three are neither all checkpointers nor all recorders.
        """
        from burnish.train.checkpoint.base import is_checkpointer
        from burnish.train.checkpoint.custom import check_checkpointers
        from burnish.train.checkpoint.part_recorders import PartRecorders

        parts = (model, optim, scheduler)
        if any(is_checkpointer(part) for part in parts):
            check_checkpointers(*parts)
            return self._replace(_recorder=None, _checkpointers=parts)
        recorders = PartRecorders(model=model, optim=optim, scheduler=scheduler)
        return self._replace(_recorder=recorders, _checkpointers=None)

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> Self:
        """Which epoch checkpoints to keep (default: last 2 + best valid loss)."""
        return self._replace(_strategy=strategy)

    def checkpoint(self, epoch: int | Literal["latest"]) -> Self:
        """Resume from the checkpoint of `epoch`, or `"latest"` (fails if there is none)."""
        if epoch == ResumeFrom.LATEST.value:
            return self._replace(_resume_from=ResumeFrom.LATEST)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(
                "`checkpoint` takes an epoch (an integer >= 1) or 'latest'. "
                f"Received: checkpoint={epoch!r}."
            )
        return self._replace(_resume_from=epoch)

    def resume(self) -> Self:
        """Continue from the newest complete checkpoint, exactly; start fresh if there is none."""
        return self._replace(_resume_from=ResumeFrom.AUTO)

    def checkpoint_every(self, iterations: int) -> Self:
        """Also commit a checkpoint every `iterations` training iterations (crash safety)."""
        _require_positive("checkpoint_every", iterations)
        return self._replace(_checkpoint_every=iterations)

    def preemption(
        self,
        signals: Sequence[signal.Signals | int | str] | None = None,
        requeue: bool = False,
        exit_code: int | None = None,
    ) -> Self:
        """What a preemption signal does (by default SIGTERM is caught, without this call).

        While `fit` runs, the first of `signals` stops the run at the next iteration boundary
        (in training or validation), commits a checkpoint of that exact position (an
        asynchronous write in flight is finished first), says so on the console and in
        `experiment.log`, and raises `burnish.train.Preempted`, a `SystemExit` with
        `exit_code`: the code after `fit` does not run, and `.resume()` continues exactly.
        A second signal ends the process at once. With several ranks, a signal that reaches
        any rank stops every rank at the same iteration, within `sync_every` iterations
        (see docs/crash-safety.md, "Preemption").

        Args:
            signals: the signals to catch (e.g. `[signal.SIGUSR1]` or `["SIGTERM",
                "SIGUSR1"]`); `[]` switches preemption handling off; None: SIGTERM.
            requeue: after the checkpoint commits, rank 0 runs `scontrol requeue
                $SLURM_JOB_ID` (when `SLURM_JOB_ID` is set).
            exit_code: the process's exit code; None: 128 + the signal's number (143 for
                SIGTERM).

        Raises:
            ValueError: for SIGKILL, SIGSTOP or SIGINT (Ctrl-C has its own graceful stop),
                something that is not a signal, or an exit code outside 0..255.
        """
        from burnish.train.preemption import preemption_settings

        return self._replace(_preemption=preemption_settings(signals, requeue, exit_code))

    # -- output ----------------------------------------------------------------------------

    def renderer(self, renderer: MetricsRenderer | Any) -> Self:
        """Use this renderer instead of the default (TUI in a terminal, else CLI): a burnish
        `MetricsRenderer`, or one written to Burn's traits (`update_train`, `update_split`, ...;
        see `burnish.train.renderer.burn_trait`)."""
        from burnish.train.renderer.burn_trait import as_metrics_renderer

        as_metrics_renderer(renderer)  # a TypeError now for an object of neither kind
        return self._replace(_renderer=renderer)

    def with_progress_logger(self, logger: TrainingProgressLogger | Any) -> Self:
        """Tell `logger` where the run is (Burn main's `TrainingProgressLogger`: `start`,
        `start_split`, `update_split`, `end_split`, `update_epoch`, `end`), beside the renderer.

        Raises:
            TypeError: if `logger` has none of those methods.
        """
        check_progress_logger(logger, "update_split")
        return self._replace(_progress_logger=logger)

    def with_metric_logger(self, logger: MetricLogger, valid: MetricLogger | None = None) -> Self:
        """Log metric values to `logger` instead of the files of `train/` and `valid/`.

        Burn main's form, `with_metric_logger(InMemoryMetricLogger())`, gives one logger every
        split (it keeps them apart through `logger.for_split(split)`); the seeds' form,
        `with_metric_logger(train_logger, valid_logger)`, gives one per split.

        Raises:
            TypeError: if a logger is not a `MetricLogger`, or one logger cannot serve both
                splits (see `MetricLogger.for_split`).
        """
        from burnish.train.logger import MetricLogger

        for given in (logger, valid):
            if given is not None and not isinstance(given, MetricLogger):
                raise TypeError(
                    "`with_metric_logger` takes burnish.train.logger.MetricLogger instances "
                    f"(e.g. InMemoryMetricLogger()). Received: {type(given).__name__}."
                )
        if valid is None:
            loggers = {s: logger.for_split(s) for s in (Split.TRAIN, Split.VALID)}
            return self._replace(_loggers=loggers)
        return self._replace(_loggers={Split.TRAIN: logger, Split.VALID: valid})

    def log_to(self, *loggers: ExperimentLogger, config: Any = None) -> Self:
        """Also send the run to experiment trackers, beside Burn's file logs (rank 0 only).

        Each tracker gets every numeric metric of both splits per epoch, the batch values of
        every `log_every(k)`-th iteration (default 50), the learning rate (as `lr`, unless a
        `LearningRateMetric` logs it), `config` and the learner's settings as parameters, and
        the summary at the end. A resumed run continues each tracker's run
        without duplicating or losing points. `with_metric_logger` still replaces the file
        logs; `log_to` adds to them and may be called several times.

        Example:
            >>> builder.log_to(TensorBoardLogger("runs/mnist"), CsvLogger("metrics.csv"),
            ...                config=training_config)  # doctest: +SKIP

        Args:
            *loggers: `ExperimentLogger`s such as `TensorBoardLogger`, `CsvLogger`,
                `MlflowLogger`, `WandbLogger`.
            config: the run's config (a `@bn.config` instance, a dataclass or a mapping),
                recorded as the trackers' parameters.

        Raises:
            TypeError: if a logger is not an `ExperimentLogger`.
        """
        from burnish.train.logger.tracker import ExperimentLogger

        for logger in loggers:
            if not isinstance(logger, ExperimentLogger):
                raise TypeError(
                    "`log_to` takes ExperimentLoggers (TensorBoardLogger, CsvLogger, "
                    f"MlflowLogger, WandbLogger). Received: {logger!r}. A MetricLogger "
                    "replaces the file logs: pass it to `with_metric_logger`."
                )
        config = self._tracker_config if config is None else config
        return self._replace(_trackers=[*self._trackers, *loggers], _tracker_config=config)

    def log_every(self, iterations: int) -> Self:
        """Give the trackers (`log_to`) iteration values every `iterations` iterations.

        Training iterations are logged when the global step (training iterations since the
        run began) is a multiple of `iterations`, validation iterations when their number in
        the epoch is. The points are the same whatever the speed of the run and across a
        resume; the values come with the processor's batched read-backs, at no extra host
        sync. Default 50 (Lightning's `log_every_n_steps`). Burn's file logs keep every
        iteration.
        """
        _require_positive("log_every", iterations)
        return self._replace(_log_every=iterations)

    def with_listener(self, listener: TrainingListener) -> Self:
        """Call `listener` at the run's moments: fit start, each iteration's end, each epoch's
        and validation's end, each checkpoint, fit end (see `TrainingListener`).

        Listeners run in the order they were added, on rank 0 unless their class sets
        `all_ranks = True`. Their events carry metric values the learner already read back: a
        listener adds no host sync. One may stop the run (`event.stop(reason)`); one with
        `to_record`/`load_record` is checkpointed and resumes exactly. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder, TrainingListener
            >>> class PrintEpochs(TrainingListener):
            ...     def on_epoch_end(self, event):
            ...         print(event.epoch, dict(event.values))
            >>> builder = LearnerBuilder("artifacts").with_listener(PrintEpochs())

        Raises:
            TypeError: if `listener` is not a `TrainingListener`, or has only one of
                `to_record` and `load_record`.
        """
        from burnish.train.listener import TrainingListener

        if not isinstance(listener, TrainingListener):
            raise TypeError(
                "`with_listener` takes a burnish.train.TrainingListener. Received: "
                f"{listener!r}. Subclass TrainingListener and override the methods you need "
                "(on_iteration_end, on_epoch_end, ...)."
            )
        has = [
            name for name in ("to_record", "load_record") if callable(getattr(listener, name, None))
        ]
        if len(has) == 1:
            missing = "load_record" if has == ["to_record"] else "to_record"
            raise TypeError(
                f"The listener {type(listener).__name__} has `{has[0]}` but no `{missing}`: "
                "a checkpointed listener needs both (its state goes into each checkpoint and "
                f"comes back on resume). Add `{missing}`, or remove `{has[0]}`."
            )
        return self._replace(_listeners=[*self._listeners, listener])

    def with_application_logger(self, installer: ApplicationLoggerInstaller | None) -> Self:
        """Install this application logger (None: leave Python logging alone)."""
        return self._replace(_application_logger=installer)

    def summary(self) -> Self:
        """Print the LearnerSummary table when `fit` ends."""
        return self._replace(_summary=True)

    def _learner_options(self, optim: Optimizer) -> LearnerOptions:
        """The settings as `LearnerOptions`, checked against this machine and `optim`."""
        options = self._options()
        if options.device is not None:
            check_device(options.device)
        if options.compile_step:
            from burnish.train.compile import check_compiled_step

            check_compiled_step(
                optim,
                grads_accumulation=options.grads_accumulation,
                mixed_precision=options.mixed_precision,
                strategy=options.strategy,
                world_size=int(os.environ.get("WORLD_SIZE", "1")),
            )
        return options

    def _options(self) -> LearnerOptions:
        from burnish.train.checkpoint import default_checkpointing_strategy
        from burnish.train.checkpoint.custom import CustomCheckpointers
        from burnish.train.checkpoint.file import FileCheckpointer
        from burnish.train.renderer.burn_trait import as_metrics_renderer

        checkpointer: FileCheckpointer | None = None
        directory = self._artifact_dir / "checkpoint"
        if self._checkpointers is not None:
            checkpointer = CustomCheckpointers(directory, *self._checkpointers)
        elif self._recorder is not None:
            checkpointer = FileCheckpointer(directory, self._recorder)
        elif self._resume_from is not None or self._checkpoint_every is not None:
            raise ValueError(
                "`checkpoint(...)`, `resume()` and `checkpoint_every(...)` need checkpoints: "
                "add `.with_file_checkpointer(recorder)` to the builder."
            )
        if self._strategy_name == "fsdp" and self._mixed_precision == torch.float16:
            raise ValueError(
                "strategy('fsdp') trains in float32 or bfloat16: float16 needs a loss scaler "
                "whose inf/NaN check spans every rank's shard of the gradients. Received: "
                "mixed_precision='fp16'. Use mixed_precision('bf16')."
            )
        check_ema_and_non_finite(self._ema, self._on_non_finite, self._strategy_name,
                                 self._compile_step)  # fmt: skip
        metrics = run_metrics(self._metrics, self._ema, self._on_non_finite)
        strategy = self._strategy or default_checkpointing_strategy()
        watched = []
        if self._early_stopping is not None:
            watched.append(("early_stopping", self._early_stopping.watched_metrics()))
        if checkpointer is not None and self._strategy is not None:
            watched.append(("with_checkpointing_strategy", strategy.watched_metrics()))
        check_watched_metrics(watched, metrics, self._valid_every)
        device, strategy_name = self._device, self._strategy_name
        if self._execution is not None:
            device = self._execution.process_device()
            if len(self._execution.devices) > 1:
                strategy_name = self._execution.strategy_name
        return LearnerOptions(
            artifact_dir=self._artifact_dir,
            num_epochs=self._epochs(),
            metrics={split: tuple(split_metrics) for split, split_metrics in metrics.items()},
            loggers=self._loggers,
            renderer=as_metrics_renderer(self._renderer, self._progress_logger),
            interrupter=self._interrupter,
            checkpointer=checkpointer,
            checkpointing_strategy=strategy,
            resume_from=self._resume_from,
            early_stopping=self._early_stopping,
            grads_accumulation=self._grads_accumulation,
            lr_step=self._lr_step,
            device=device,
            application_logger=self._installer(),
            summary=self._summary,
            checkpoint_every=self._checkpoint_every,
            deterministic=self._deterministic,
            compile=self._compile,
            compile_step=self._compile_step,
            mixed_precision=self._mixed_precision,
            strategy=strategy_name,
            shard_policy=self._shard_policy,
            trackers=tuple(self._trackers),
            tracker_config=self._tracker_config,
            log_every=self._log_every,
            listeners=tuple(self._listeners),
            ema=self._ema,
            on_non_finite=self._on_non_finite,
            max_iterations=self._max_iterations,
            valid_every=self._valid_every,
            preemption=self._preemption,
            gradient_checkpointing=self._gradient_checkpointing,
            checkpoint_blocks=self._checkpoint_blocks,
            needs_validation=validation_settings(
                self._metrics, self._early_stopping, self._strategy, self._valid_every, self._ema
            ),
        )

    def _epochs(self) -> int | None:
        """The `num_epochs` set; unset, 1, or None (as many as the step budget needs)."""
        if self._num_epochs is not None:
            return self._num_epochs
        return None if self._max_iterations is not None else 1

    def _installer(self) -> ApplicationLoggerInstaller | None:
        if self._application_logger != _DEFAULT:
            return self._application_logger
        from burnish.train.logger import FileApplicationLoggerInstaller

        return FileApplicationLoggerInstaller(self._artifact_dir / "experiment.log")


def _require_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1. Received: {name}={value!r}.")

"""The experiment trackers of a run (`LearnerBuilder.log_to`), driven beside the renderer.

The metrics processor shows values through one `MetricsRenderer`. `Tracking` is that renderer
for a run with trackers: it forwards every call to the real renderer and hands values to each
`ExperimentLogger` — epoch values at the end of each split, and iteration values at a fixed
cadence (`IterationPoints`: every `log_every` global training steps and validation
iterations), whatever the renderer's pace, so a run logs the same points however fast it ran and
wherever it was interrupted. The iteration values ride on the processor's read-backs: no
extra host sync. The learner adds the lifecycle: `start` after the checkpoint is restored,
`flush` before each checkpoint, `finish` and `close`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.train.loop.position import Phase, Position
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.lineage import RunStart
    from burnish.train.interrupter import Interrupter
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.loop.state import TrainingState
    from burnish.train.metric.base import Metric, MetricMetadata
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.settings.options import LearnerOptions

__all__ = [
    "DEFAULT_LOG_EVERY",
    "IterationPoints",
    "Tracking",
    "branch_name",
    "final_model_file",
    "run_settings",
]

log = logging.getLogger("burnish.train")

Where = Callable[[], tuple[int, "float | None"]]
"""Returns the global training step and the last learning rate."""

DEFAULT_LOG_EVERY = 50  # Lightning's `log_every_n_steps`
LogIteration = Callable[[Split, int, int, int, dict[str, float], "float | None"], None]
"""Logs one iteration: split, epoch, iteration, global step, values, learning rate."""


class IterationPoints:
    """Which iterations the trackers get, and their values once the processor reads them back.

    A training iteration is a point when its global step is a multiple of `every`, a validation
    iteration when its number in the epoch is. The processor notes each iteration as it is
    processed (a host-side check, no device access) and hands over the host values of its
    pending iterations whenever it drains them (at its own pace); the noted ones are logged
    then, each with its own values, step and learning rate.

    Args:
        every: the cadence, in iterations (>= 1).
        where: the run's global step and learning rate.
        log: called once per point, in iteration order.
    """

    def __init__(self, every: int, where: Where, log: LogIteration) -> None:
        self.every = every
        self.where = where
        self.log = log
        # Per split: (pending row, epoch, iteration, step, lr) of the points not yet drained.
        self.noted: dict[Split, list[tuple[int, int, int, int, float | None]]] = {}

    def note(self, split: Split, row: int, metadata: MetricMetadata) -> None:
        """Iteration `metadata.iteration` of `split` is the processor's pending row `row`."""
        step, _ = self.where()
        number = step if split is Split.TRAIN else metadata.iteration
        if number % self.every == 0:
            point = (row, metadata.epoch, metadata.iteration, step, metadata.lr)
            self.noted.setdefault(split, []).append(point)

    def drained(self, split: Split, names: list[str], rows: list[float]) -> None:
        """The pending rows of `split` were read back: `rows` holds `len(names)` per row."""
        width = len(names)
        for row, epoch, iteration, step, lr in self.noted.pop(split, ()):
            values = dict(zip(names, rows[row * width : (row + 1) * width]))
            self.log(split, epoch, iteration, step, values, lr)

    def forget(self, split: Split) -> None:
        """The pending rows of `split` were dropped (an interrupted validation)."""
        self.noted.pop(split, None)


class Tracking(MetricsRenderer):
    """A renderer that also feeds experiment trackers.

    Args:
        renderer: the renderer the user sees.
        trackers: the experiment loggers.
        where: the run's global step and last learning rate, read when values are logged.
        log_every: the iteration points' cadence (see `IterationPoints`).
        lr_metric: whether the train split has a `LearningRateMetric`: then the trackers get
            the learning rate as that metric only, not also as `lr`.
        validations: with `valid_every`, the number of the last validation done: the trackers
            log the valid split's epoch values at it (its `valid/epoch-N`), while the renderer
            shows them in the training epoch; None: at the epoch the renderer gets.
    """

    def __init__(
        self,
        renderer: MetricsRenderer,
        trackers: Sequence[ExperimentLogger],
        where: Where,
        log_every: int = DEFAULT_LOG_EVERY,
        lr_metric: bool = False,
        validations: Callable[[], int] | None = None,
    ) -> None:
        self.renderer = renderer
        self.trackers = list(trackers)
        self.where = where
        self.started = False
        self.lr_metric = lr_metric
        self.validations = validations
        self.iterations = IterationPoints(log_every, where, self._log_iteration)

    @classmethod
    def for_run(
        cls,
        renderer: MetricsRenderer,
        options: LearnerOptions,
        where: Where,
        validations: Callable[[], int] | None = None,
    ) -> Tracking:
        """The tracking of a run with `options.tracking.trackers`."""
        from burnish.train.metric.learning_rate import LearningRateMetric

        train: Sequence[Metric] = options.metrics.get(Split.TRAIN, ())
        lr_metric = any(isinstance(metric, LearningRateMetric) for metric in train)
        return cls(
            renderer,
            options.tracking.trackers,
            where,
            options.tracking.log_every,
            lr_metric,
            validations,
        )

    # -- the run's lifecycle ---------------------------------------------------------------

    def start_run(
        self,
        artifact_dir: Path,
        config: Any,
        hparams: Mapping[str, Any],
        resumed: Position | None,
        branch: str | None = None,
    ) -> None:
        """Open every tracker; a resumed run continues after `resumed` (as the branch
        `branch` when it leaves the line those earlier points belong to)."""
        from burnish.train.logger.tracker import ResumePosition, RunInfo

        resume = None
        if resumed is not None:
            step, _ = self.where()
            train_ended = resumed.phase is not Phase.TRAIN
            validations = self.validations() if self.validations is not None else None
            resume = ResumePosition(
                resumed.epoch, resumed.iteration, step, train_ended, validations
            )
        from burnish.train.report.announce import Announcer

        announce = Announcer(self.renderer)
        branch = branch if resume is not None else None
        run = RunInfo(
            artifact_dir, config, dict(hparams), resume, branch,
            warn=announce.warning, say=announce.info,
        )  # fmt: skip
        for tracker in self.trackers:
            tracker.start(run)
        self.started = True

    def flush(self) -> None:
        """Make what the trackers got durable (before a checkpoint commits)."""
        if self.started:
            for tracker in self.trackers:
                tracker.flush()

    def finish(self, summary: str | None, model_path: Path | None) -> None:
        """The run ended normally: the summary and the final model to every tracker."""
        if self.started:
            for tracker in self.trackers:
                tracker.finish(summary, model_path)

    def close_trackers(self) -> None:
        """Release every tracker, also after a failure; the first error is raised."""
        errors = []
        for tracker in self.trackers:
            try:
                tracker.close()
            except Exception as error:  # close the others first
                log.exception("Closing %r failed.", tracker)
                errors.append(error)
        if errors:
            raise errors[0]

    # -- the renderer's interface ----------------------------------------------------------

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Start the renderer (trackers start in `start_run`, after the checkpoint is restored)."""
        self.renderer.start(num_epochs, interrupter)

    def due(self) -> bool:
        """Whether the renderer wants values now (its refresh pace, which trackers share)."""
        return self.renderer.due()

    def start_split(self, split: Split) -> None:
        """Forward the start of `split`'s epoch to the renderer."""
        self.renderer.start_split(split)

    def model_summary(self, summary: ModelSummary) -> None:
        """Show the model summary in the renderer."""
        self.renderer.model_summary(summary)

    def message(self, text: str) -> None:
        """Forward `text` to the renderer."""
        self.renderer.message(text)

    def render(self, snapshot: RenderSnapshot) -> None:
        """Render `snapshot` (the trackers get iterations from `iterations`, at their cadence)."""
        self.renderer.render(snapshot)

    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """Show an epoch's values, then log them to the started trackers (with the training lr)."""
        self.renderer.end_epoch(split, epoch, values)
        if not self.started:
            return
        _, lr = self.where()
        lr = self._lr(split, lr)
        if split is Split.VALID and self.validations is not None:
            epoch = self.validations()
        for tracker in self.trackers:
            tracker.log_epoch(split.value, epoch, values, lr)

    def _log_iteration(
        self,
        split: Split,
        epoch: int,
        iteration: int,
        step: int,
        values: dict[str, float],
        lr: float | None,
    ) -> None:
        if not self.started:
            return
        lr = self._lr(split, lr)
        for tracker in self.trackers:
            tracker.log_iteration(split.value, epoch, iteration, step, values, lr)

    def _lr(self, split: Split, lr: float | None) -> float | None:
        """The `lr` the trackers get: the training rate, unless a metric already logs it."""
        return None if split is not Split.TRAIN or self.lr_metric else lr

    def close(self) -> None:
        """Close the renderer; the trackers are closed by `close_trackers`."""
        self.renderer.close()


def run_settings(
    options: LearnerOptions, context: DistributedContext, state: TrainingState
) -> dict[str, Any]:
    """The learner's own settings, recorded by the trackers beside the user's config."""
    precision = options.precision.autocast
    device = context.device or next((p.device for p in state.model.parameters()), "cpu")
    settings: dict[str, Any] = {
        "num_epochs": options.stopping.num_epochs,
        "grads_accumulation": options.optimization.grads_accumulation or 1,
        "lr_step": options.optimization.lr_step,
        "log_every": options.tracking.log_every,
        "device": str(device),
        "world_size": context.world_size,
        "strategy": options.parallelism.kind,
        "mixed_precision": str(precision).removeprefix("torch.") if precision else "float32",
        "optimizer": type(state.optim).__name__,
        "on_non_finite": options.optimization.on_non_finite,
    }
    if options.optimization.ema is not None:
        settings["ema_decay"] = options.optimization.ema.decay
    return settings


def branch_name(start: RunStart | None) -> str | None:
    """The name of the line a run writes (`RunInfo.branch`): `"line N from <checkpoint>"`
    for a branch, whether this start began it or continues it (a kill may have cut the
    earlier start short before the trackers heard of it); None on the run's first line."""
    if start is None or start.line.number == 0:
        return None
    return f"line {start.line.number} from {start.line.origin}"


def final_model_file(checkpointer: FileCheckpointer | None) -> Path | None:
    """The model record of the newest epoch checkpoint; None without checkpoints."""
    if checkpointer is None:
        return None
    epochs = [point for point in checkpointer.committed() if point.iteration is None]
    if not epochs:
        return None
    found = sorted((checkpointer.directory / epochs[-1].name).glob("model.*"))
    return found[0] if found else None

"""The experiment trackers of a run (`LearnerBuilder.log_to`), driven beside the renderer.

`Tracking` is a component of the loop (component.py) and a watcher of the metrics processor
(report/watcher.py): it hands each `ExperimentLogger` the epoch values at the end of each split
(with the values listeners logged), and iteration values at a fixed cadence
(`IterationPoints`: every `log_every` global training steps and validation iterations),
whatever the renderer's pace, so a run logs the same points however fast it ran and wherever it
was interrupted. The iteration values ride on the processor's read-backs: no extra host sync.
The trackers start after the checkpoint is restored (`fit_start`), flush before each
checkpoint, finish at the end of a run that ended normally and close however it ends.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.train.components.component import Component
from burnish.train.loop.position import Phase, Position
from burnish.train.split import Split

if TYPE_CHECKING:
    from torch import Tensor

    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.lineage import RunStart
    from burnish.train.components.loop_view import LoopView
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.loop.result import TrainingResult
    from burnish.train.loop.state import TrainingState
    from burnish.train.metric.base import Metric, MetricMetadata
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.report.announce import Announcer
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


class Tracking(Component):
    """The run's experiment trackers, as a component of the loop and a watcher of its metrics.

    Args:
        trackers: the experiment loggers.
        log_every: the iteration points' cadence (see `IterationPoints`).
        lr_metric: whether the train split has a `LearningRateMetric`: then the trackers get
            the learning rate as that metric only, not also as `lr`.
    """

    def __init__(
        self,
        trackers: Sequence[ExperimentLogger],
        log_every: int = DEFAULT_LOG_EVERY,
        lr_metric: bool = False,
    ) -> None:
        self.trackers = list(trackers)
        self.started = False
        self.lr_metric = lr_metric
        self.run: LoopView | None = None
        self.iterations = IterationPoints(log_every, self._where, self._log_iteration)

    @classmethod
    def for_run(cls, options: LearnerOptions) -> Tracking:
        """The tracking of a run with `options.tracking.trackers`."""
        from burnish.train.metric.learning_rate import LearningRateMetric

        train: Sequence[Metric] = options.metrics.get(Split.TRAIN, ())
        lr_metric = any(isinstance(metric, LearningRateMetric) for metric in train)
        return cls(options.tracking.trackers, options.tracking.log_every, lr_metric)

    def bind(self, run: LoopView) -> None:
        self.run = run

    def _run(self) -> LoopView:
        assert self.run is not None, "Tracking.bind(run) comes before the run starts"
        return self.run

    def _where(self) -> tuple[int, float | None]:
        state = self._run().state
        return state.step, state.lr

    # -- the run's lifecycle ---------------------------------------------------------------

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The trackers are released however the fit ends."""
        try:
            yield
        finally:
            self.close_trackers()

    def fit_start(self, resumed: bool) -> None:
        """Open every tracker; a resumed run continues after its position (as a branch when
        it leaves the line the earlier points belong to)."""
        run = self._run()
        settings = run_settings(run.options, run.context, run.state)
        position = run.state.position if resumed else None
        branch = branch_name(run.checkpointer.start)
        self.start_run(run.options.artifact_dir, run.options.tracking.config, settings, position,
                       branch, run.announce)  # fmt: skip

    def start_run(
        self,
        artifact_dir: Path,
        config: Any,
        hparams: Mapping[str, Any],
        resumed: Position | None,
        branch: str | None,
        announce: Announcer,
    ) -> None:
        from burnish.train.logger.tracker import ResumePosition, RunInfo

        resume = None
        if resumed is not None:
            run = self._run()
            train_ended = resumed.phase is not Phase.TRAIN
            every = run.options.validation.every  # without it, validation N is epoch N's
            validations = run.state.validations if every is not None else None
            resume = ResumePosition(
                resumed.epoch, resumed.iteration, run.state.step, train_ended, validations
            )
        branch = branch if resume is not None else None
        info = RunInfo(
            artifact_dir, config, dict(hparams), resume, branch,
            warn=announce.warning, say=announce.info,
        )  # fmt: skip
        for tracker in self.trackers:
            tracker.start(info)
        self.started = True

    def before_checkpoint(self) -> None:
        """Make what the trackers got durable (before a checkpoint commits)."""
        if self.started:
            for tracker in self.trackers:
                tracker.flush()

    def fit_end(self, result: TrainingResult) -> None:
        """A run that ended normally: the summary and the final model to every tracker."""
        if not self.started or result.interrupted or result.stopped_non_finite:
            return
        from burnish.train.report.summary import learner_summary

        run = self._run()
        logged = run.processor.logged_names()
        summary = learner_summary(run.options, result.epochs_completed, result.validations, logged)
        model = final_model_file(run.options.checkpointing.checkpointer)
        for tracker in self.trackers:
            tracker.finish(None if summary is None else str(summary), model)

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

    def split_end(self, split: Split, epoch: int, values: MutableMapping[str, float]) -> None:
        """Log a split's epoch values (validation N's at N) to the started trackers, with the
        training lr; registered after the listeners, it has the values they logged too."""
        if not self.started:
            return
        _, lr = self._where()
        lr = self._lr(split, lr)
        for tracker in self.trackers:
            tracker.log_epoch(split.value, epoch, dict(values), lr)

    # -- the metrics processor's watcher ---------------------------------------------------

    def note(self, split: Split, row: int, item: Any, metadata: MetricMetadata) -> None:
        self.iterations.note(split, row, metadata)

    def pending(self, split: Split) -> list[Tensor]:
        return []

    def drained(
        self, split: Split, names: Sequence[str], rows: Sequence[float], own: Sequence[float]
    ) -> None:
        self.iterations.drained(split, list(names), list(rows))

    def forget(self, split: Split) -> None:
        self.iterations.forget(split)

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

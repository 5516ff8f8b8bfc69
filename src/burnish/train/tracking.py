"""The experiment trackers of a run (`LearnerBuilder.log_to`), driven beside the renderer.

The metrics processor shows values through one `MetricsRenderer`. `Tracking` is that renderer
for a run with trackers: it forwards every call to the real renderer and hands the same values
to each `ExperimentLogger` — iteration values when the renderer is due (so trackers cost no
extra read-back), epoch values at the end of each split. The learner adds the lifecycle:
`start` after the checkpoint is restored, `flush` before each checkpoint, `finish` and `close`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.train.position import Phase, Position
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.training_state import TrainingState
    from burnish.train.distributed import DistributedContext
    from burnish.train.interrupter import Interrupter
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.options import LearnerOptions

__all__ = ["Tracking", "final_model_file", "run_settings"]

log = logging.getLogger("burnish.train")

Where = Callable[[], tuple[int, "float | None"]]
"""Returns the global training step and the last learning rate."""


class Tracking(MetricsRenderer):
    """A renderer that also feeds experiment trackers.

    Args:
        renderer: the renderer the user sees.
        trackers: the experiment loggers.
        where: the run's global step and last learning rate, read when values are logged.
    """

    def __init__(
        self, renderer: MetricsRenderer, trackers: Sequence[ExperimentLogger], where: Where
    ) -> None:
        self.renderer = renderer
        self.trackers = list(trackers)
        self.where = where
        self.started = False

    # -- the run's lifecycle ---------------------------------------------------------------

    def start_run(
        self,
        artifact_dir: Path,
        config: Any,
        hparams: Mapping[str, Any],
        resumed: Position | None,
    ) -> None:
        """Open every tracker; a resumed run continues after `resumed`."""
        from burnish.train.logger.tracker import ResumePosition, RunInfo

        resume = None
        if resumed is not None:
            step, _ = self.where()
            train_ended = resumed.phase is not Phase.TRAIN
            resume = ResumePosition(resumed.epoch, resumed.iteration, step, train_ended)
        run = RunInfo(artifact_dir, config, dict(hparams), resume)
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

    def model_summary(self, summary: ModelSummary) -> None:
        """Show the model summary in the renderer."""
        self.renderer.model_summary(summary)

    def render(self, snapshot: RenderSnapshot) -> None:
        """Render `snapshot`, then log its numeric values to the started trackers (an iteration)."""
        self.renderer.render(snapshot)
        if not self.started:
            return
        step, lr = self.where()
        train = snapshot.split is Split.TRAIN
        values = {name: current for name, (current, _) in snapshot.numeric.items()}
        progress = snapshot.progress
        for tracker in self.trackers:
            tracker.log_iteration(
                snapshot.split.value,
                progress.epoch,
                progress.iteration,
                step,
                values,
                lr if train else None,
            )

    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """Show an epoch's values, then log them to the started trackers (with the training lr)."""
        self.renderer.end_epoch(split, epoch, values)
        if not self.started:
            return
        _, lr = self.where()
        for tracker in self.trackers:
            tracker.log_epoch(split.value, epoch, values, lr if split is Split.TRAIN else None)

    def close(self) -> None:
        """Close the renderer; the trackers are closed by `close_trackers`."""
        self.renderer.close()


def run_settings(
    options: LearnerOptions, context: DistributedContext, state: TrainingState
) -> dict[str, Any]:
    """The learner's own settings, recorded by the trackers beside the user's config."""
    precision = options.mixed_precision
    device = context.device or next((p.device for p in state.model.parameters()), "cpu")
    return {
        "num_epochs": options.num_epochs,
        "grads_accumulation": options.grads_accumulation or 1,
        "lr_step": options.lr_step,
        "device": str(device),
        "world_size": context.world_size,
        "strategy": options.strategy,
        "mixed_precision": str(precision).removeprefix("torch.") if precision else "float32",
        "optimizer": type(state.optim).__name__,
    }


def final_model_file(checkpointer: FileCheckpointer | None) -> Path | None:
    """The model record of the newest epoch checkpoint; None without checkpoints."""
    if checkpointer is None:
        return None
    epochs = [point for point in checkpointer.committed() if point.iteration is None]
    if not epochs:
        return None
    found = sorted((checkpointer.directory / epochs[-1].name).glob("model.*"))
    return found[0] if found else None

"""The learner's checkpointing (Burn's `LearningCheckpointer`): when to save, what to delete,
where to resume.

The learner hands it the run's `TrainingState` at three moments: `restore` before the first
epoch, `save_iteration` mid-epoch (`checkpoint_every`, interruption) and `save_epoch` once every
decision of the epoch is taken (validation, early stopping). Each checkpoint records the state
after those decisions: the strategy's, which checkpoints remain (`Retention`) and, for the last
epoch, how the run ended (`RunEnd`). Only rank 0 writes; every rank takes part in the
collectives (metric flushes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from burnish.train.announce import Announcer
from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer
from burnish.train.checkpoint.resume import ResumeFrom, ResumePoint, find_resume_point
from burnish.train.checkpoint.retention import Retention
from burnish.train.checkpoint.run_end import Resumed, RunEnd
from burnish.train.position import Phase, Position
from burnish.train.split import Split

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.checkpoint.training_state import TrainingState
    from burnish.train.metric.store import MetricFinder

__all__ = ["LearningCheckpointer", "resume_line"]


class LearningCheckpointer:
    """Saves and restores a run's `TrainingState` as committed checkpoint directories.

    Args:
        checkpointer: writes and reads the checkpoint directories; None: no checkpoints.
        strategy: which epoch checkpoints to keep.
        resume_from: the checkpoint to start from (an epoch, `ResumeFrom.LATEST`,
            `ResumeFrom.AUTO`) or None for a fresh start.
        is_main: whether this process writes (rank 0).
        before_save: called on rank 0 right before a checkpoint is committed (trackers make
            their points durable there, so a resume never loses them).
        after_save: called on rank 0 with each checkpoint saved and its directory (the
            listeners' `on_checkpoint`).
        announce: tells the user, on the console and in the log, where the run resumed and
            which checkpoints were skipped or removed; default: the log only.
    """

    def __init__(
        self,
        checkpointer: FileCheckpointer | None,
        strategy: CheckpointingStrategy,
        resume_from: int | ResumeFrom | None = None,
        is_main: bool = True,
        before_save: Callable[[], None] | None = None,
        after_save: Callable[[CheckpointId, Path], None] | None = None,
        announce: Announcer | None = None,
    ) -> None:
        self.checkpointer = checkpointer
        self.strategy = strategy
        self.resume_from = resume_from
        self.is_main = is_main
        self.before_save = before_save
        self.after_save = after_save
        self.retention = Retention()
        self.announce = announce or Announcer()

    def restore(
        self,
        state: TrainingState,
        device: torch.device | None,
        barrier: Callable[[], None] | None = None,
    ) -> Resumed | None:
        """Load the checkpoint the run asks for into `state`; None for a fresh start.

        Deletions that a crash cut short (between a checkpoint's commit and the deletions
        its strategy decided) are carried out first: see `Retention`.

        Raises:
            CheckpointError: if the requested checkpoint is missing or damaged.
        """
        if self.checkpointer is None or self.resume_from is None:
            return None
        point = find_resume_point(
            self.checkpointer,
            self.resume_from,
            device,
            clean=self.is_main,
            wait=barrier,
            announce=self.announce,
        )
        if point is None:
            return None
        self._load(state, point)
        self.announce.info(resume_line(point.checkpoint, state.step, state.position))
        if self.is_main:
            self._finish_deletions(point.checkpoint)
        end = RunEnd.from_record(point.records["learner"].get("end"))
        path = self.checkpointer.directory / point.checkpoint.name
        return Resumed(path, state.position.epoch - 1, end, state.optimizer_steps)

    def save_iteration(self, state: TrainingState) -> None:
        """Commit a mid-epoch checkpoint; older mid-epoch checkpoints are then deleted.

        The metric entries still pending are written to the logs first, with or without a
        checkpointer (an interrupted run keeps the lines of the iterations it did).
        """
        state.processor.flush(state.position.epoch)  # a collective with several ranks
        if self.checkpointer is None:
            return
        records = self._records(state) if state.sharded else None  # gathered by every rank
        if not self.is_main:
            return
        point = CheckpointId(state.position.epoch, state.position.iteration)
        if self.before_save is not None:
            self.before_save()
        path = self.checkpointer.save(
            point, records if records is not None else self._records(state)
        )
        if self.after_save is not None:
            self.after_save(point, path)
        self._delete_superseded(point)

    def save_epoch(
        self,
        epoch: int,
        state: TrainingState,
        store: MetricFinder,
        end: RunEnd | None = None,
        point: CheckpointId | None = None,
    ) -> None:
        """Carry out the strategy's actions for `epoch`: save first, then delete.

        Args:
            epoch: the epoch that ended; with `valid_every`, the validation that ended (the
                strategy's numbers count validations).
            state: the run's state after every decision of the epoch (early stopping's too).
            store: the metric logs the strategy reads.
            end: how the run ended at `epoch`, None if it goes on; recorded in the checkpoint,
                which is then saved whatever the strategy says.
            point: the checkpoint to write for it (a validation inside an epoch:
                `epoch-N-iteration-K`); None: `epoch-<epoch>`.
        """
        if self.checkpointer is None:
            return
        actions = self.strategy.checkpointing(epoch, store)
        saving, deletions = self.retention.plan(epoch, actions, end, point)
        point = point or CheckpointId(epoch)
        state.processor.flush(state.position.epoch)
        records = self._records(state, end) if saving and state.sharded else None  # every rank
        if not self.is_main:
            return
        if saving:  # save first: never zero checkpoints
            if records is None:
                records = self._records(state, end)
            if self.before_save is not None:
                self.before_save()
            path = self.checkpointer.save(point, records)
            if self.after_save is not None:
                self.after_save(point, path)
        for deleted in deletions:
            checkpoint = self.retention.checkpoint(deleted)
            if checkpoint is not None:
                self.checkpointer.delete(checkpoint)
        if saving or point.iteration is None:
            self._delete_superseded(point)

    def _delete_superseded(self, point: CheckpointId) -> None:
        """Delete the mid-epoch checkpoints before `point` that no strategy keeps."""
        assert self.checkpointer is not None
        for older in self.checkpointer.committed():
            superseded = older.iteration is not None and older.sort_key() < point.sort_key()
            if superseded and not self.retention.keeps(older):
                self.checkpointer.delete(older)

    def _records(self, state: TrainingState, end: RunEnd | None = None) -> dict[str, Any]:
        records = state.to_records()
        learner = records["learner"]
        learner["checkpointing_strategy"] = self.strategy.to_record()
        learner["retention"] = self.retention.to_record()
        learner["end"] = end.to_record() if end is not None else None
        return records

    def _present(self, point: ResumePoint) -> list[int]:
        """The epochs of the committed epoch checkpoints up to `point`."""
        assert self.checkpointer is not None
        newest = point.checkpoint.sort_key()
        return [
            found.epoch
            for found in self.checkpointer.committed()
            if found.iteration is None and found.sort_key() <= newest
        ]

    def _finish_deletions(self, resumed: CheckpointId) -> None:
        """Delete what the resumed checkpoint's state no longer keeps (see `Retention`)."""
        assert self.checkpointer is not None
        stale = self.retention.stale(self.checkpointer, resumed)
        for point in stale:
            self.checkpointer.delete(point)
        if stale:
            names = ", ".join(point.name for point in stale)
            self.announce.warning(
                f"Deleted checkpoints that a crash kept from being deleted: {names} (the "
                "checkpointing strategy of the resumed checkpoint no longer keeps them)"
            )

    def _load(self, state: TrainingState, point: ResumePoint) -> None:
        records = point.records
        state.load_records(records)
        saved = records["learner"].get("checkpointing_strategy")
        if saved is not None:
            self.strategy.load_record(saved)
        self.retention.load_record(records["learner"].get("retention"), self._present(point))
        if self.is_main:  # drop log lines written after the checkpoint; other ranks log in memory
            positions = records["learner"]["loggers"]
            for split in (Split.TRAIN, Split.VALID):
                state.processor.splits[split].logger.truncate_to(positions[split.value])


def resume_line(checkpoint: CheckpointId, step: int, position: Position) -> str:
    """The line that tells where a resumed run continues.

    Example:
        >>> resume_line(CheckpointId(2), 20, Position(3))
        'Resumed from checkpoint epoch-2, iteration 20: training continues with epoch 3.'
    """
    head = f"Resumed from checkpoint {checkpoint.name}, iteration {step}: "
    epoch = position.epoch
    if position.phase is Phase.VALID:
        return head + f"epoch {epoch}'s validation runs next."
    if position.iteration:
        return head + f"training continues in epoch {epoch} after iteration {position.iteration}."
    return head + f"training continues with epoch {epoch}."

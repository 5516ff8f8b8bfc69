"""The learner's checkpointing (Burn's `LearningCheckpointer`): when to save, what to delete,
where to resume.

The learner hands it the run's `TrainingState` at three moments: `restore` before the first
epoch, `save_iteration` mid-epoch (`checkpoint_every`, interruption) and `save_epoch` once every
decision of the epoch is taken (validation, early stopping). Each checkpoint records the state
after those decisions: the strategy's, which checkpoints remain (`Retention`) and, for the last
epoch, how the run ended (`RunEnd`). Only rank 0 writes; every rank takes part in the
collectives (metric flushes).

The loop pays only for a snapshot: the records are copied to the host (`host_snapshot`) and
handed to an `AsyncCheckpointer`, whose thread serializes, fsyncs and commits them, then
carries out the deletions that checkpoint decided. One write runs at a time; a failed write is
raised in the loop at the next save or at `wait` (the end of `fit`, see `writes`). `after_save`
(the listeners' `on_checkpoint`) is called on the loop's thread once a checkpoint has
committed: when the loop next waits for the writer (the next save, or the end of `fit`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from burnish.optim.base import Optimizer
from burnish.train.checkpoint.async_writer import AsyncCheckpointer
from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer
from burnish.train.checkpoint.lineage import Line, Lineage, RunStart, StartKind
from burnish.train.checkpoint.resume import ResumeFrom, ResumePoint, find_resume_point
from burnish.train.checkpoint.retention import Retention
from burnish.train.checkpoint.run_end import Resumed, RunEnd, resume_line
from burnish.train.checkpoint.snapshot import host_snapshot
from burnish.train.checkpoint.strategy_rule import stopping_rule
from burnish.train.loop.position import Phase
from burnish.train.report.announce import Announcer
from burnish.train.split import Split

if TYPE_CHECKING:
    from pathlib import Path

    import torch

    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.loop.state import TrainingState
    from burnish.train.metric.store import MetricFinder

log = logging.getLogger("burnish.train")

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
        after_save: called on rank 0, on the loop's thread, with each checkpoint once it has
            committed, its directory and the global step it was taken at (the listeners'
            `on_checkpoint`); at the next save or at the end of the run (`wait`).
        announce: tells the user, on the console and in the log, where the run resumed and
            which checkpoints were skipped or removed; default: the log only.
        artifact_dir: the run's directory, where a branch moves the part it leaves
            (`branches/`, see `Lineage`); default: the checkpoint directory's parent.

    Attributes:
        start: after `restore`, how the run started (fresh, continuing its line, beginning a
            branch: `RunStart`); on rank 0 only the trackers need it.
    """

    def __init__(
        self,
        checkpointer: FileCheckpointer | None,
        strategy: CheckpointingStrategy,
        resume_from: int | ResumeFrom | None = None,
        is_main: bool = True,
        before_save: Callable[[], None] | None = None,
        after_save: Callable[[CheckpointId, Path, int], None] | None = None,
        announce: Announcer | None = None,
        artifact_dir: Path | None = None,
    ) -> None:
        self.checkpointer = checkpointer
        self.strategy = strategy
        self.resume_from = resume_from
        self.is_main = is_main
        self.before_save = before_save
        self.after_save = after_save
        self.retention = Retention()
        self.announce = announce or Announcer()
        self.writer = AsyncCheckpointer()
        self._unannounced: list[tuple[CheckpointId, int]] = []  # submitted, not yet told
        self.line = Line()
        self.start = RunStart(StartKind.FRESH, self.line)
        self.lineage = None
        if checkpointer is not None:
            directory = artifact_dir if artifact_dir is not None else checkpointer.directory.parent
            self.lineage = Lineage(directory, checkpointer.directory)

    def restore(
        self,
        state: TrainingState,
        device: torch.device | None,
        barrier: Callable[[], None] | None = None,
        over: Callable[[Resumed], bool] | None = None,
        validation_next: Callable[[], bool] | None = None,
    ) -> Resumed | None:
        """Load the checkpoint the run asks for into `state`; None for a fresh start.

        `over` tells whether the resumed run has nothing left to train (then its caller says
        so, and no line says where training continues); `validation_next`, once `state` is
        loaded, whether a validation inside the epoch that a stop cut short runs first.

        Deletions that a crash cut short (between a checkpoint's commit and the deletions
        its strategy decided) are carried out first: see `Retention`.

        Raises:
            CheckpointError: if the requested checkpoint is missing or damaged.
        """
        if self.checkpointer is None or self.resume_from is None or self.lineage is None:
            return None
        finished = self._finish_branch() if self.is_main else None
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
        self._follow_line(state, point, finished)
        self._load(state, point)
        end = RunEnd.from_record(point.records["learner"].get("end"))
        path = self.checkpointer.directory / point.checkpoint.name
        position = state.position
        in_epoch = position.iteration > 0 or position.phase is not Phase.TRAIN
        resumed = Resumed(path, position.epoch - 1, end, state.optimizer_steps, in_epoch)
        if over is None or not over(resumed):
            validating = validation_next is not None and validation_next()
            self.announce.info(resume_line(point.checkpoint, state.step, position, validating))
        for change in state.changed:
            self.announce.warning(change)
        if self.is_main:
            self._finish_deletions(point.checkpoint)
        return resumed

    def save_iteration(self, state: TrainingState) -> None:
        """Checkpoint mid-epoch; once it is committed, older mid-epoch checkpoints are deleted.

        The metric entries still pending are written to the logs first, with or without a
        checkpointer (an interrupted run keeps the lines of the iterations it did). Returns
        once the state is copied; the checkpoint is written in the background.

        Raises:
            BaseException: the error of the previous checkpoint's write, if it failed.
        """
        state.processor.flush(state.position.epoch)  # a collective with several ranks
        if self.checkpointer is None:
            return
        records = self._records(state) if state.sharded else None  # gathered by every rank
        if not self.is_main:
            return
        self.wait()  # one write at a time, one snapshot in memory
        point = CheckpointId(state.position.epoch, state.position.iteration)
        if self.before_save is not None:
            self.before_save()
        snapshot = self._snapshot(state, records if records is not None else self._records(state))
        doomed = self._superseded(point)
        self.writer.submit(point.name, lambda: self._write(point, snapshot, doomed))
        self._unannounced.append((point, state.step))

    def save_epoch(
        self,
        epoch: int,
        state: TrainingState,
        store: MetricFinder,
        end: RunEnd | None = None,
        point: CheckpointId | None = None,
    ) -> None:
        """Carry out the strategy's actions for `epoch`: save first, then delete.

        Returns once the state is copied; the checkpoint is written, and the deletions made,
        in the background.

        Args:
            epoch: the epoch that ended; with `valid_every`, the validation that ended (the
                strategy's numbers count validations).
            state: the run's state after every decision of the epoch (early stopping's too).
            store: the metric logs the strategy reads.
            end: how the run ended at `epoch`, None if it goes on; recorded in the checkpoint,
                which is then saved whatever the strategy says.
            point: the checkpoint to write for it (a validation inside an epoch:
                `epoch-N-iteration-K`); None: `epoch-<epoch>`.

        Raises:
            BaseException: the error of the previous checkpoint's write, if it failed.
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
        self.wait()
        snapshot = None
        if saving:
            if self.before_save is not None:
                self.before_save()
            snapshot = self._snapshot(
                state, records if records is not None else self._records(state, end)
            )
        # What to delete is decided here, on the loop's thread, against the committed
        # checkpoints (no write is in flight): the writer only carries it out.
        doomed = [c for c in map(self.retention.checkpoint, deletions) if c is not None]
        if saving or point.iteration is None:
            doomed += [c for c in self._superseded(point) if c not in doomed]
        self.writer.submit(point.name, lambda: self._write_epoch(epoch, point, snapshot, doomed))
        if saving:
            self._unannounced.append((point, state.step))

    def wait(self) -> None:
        """Block until every checkpoint asked for is committed, then call `after_save` for
        each; raise a write's error (that checkpoint was not committed)."""
        unannounced, self._unannounced = self._unannounced, []
        self.writer.wait()
        if self.after_save is None or self.checkpointer is None:
            return
        for point, step in unannounced:
            self.after_save(point, self.checkpointer.directory / point.name, step)

    @contextlib.contextmanager
    def writes(self) -> Iterator[None]:
        """Around a run: on leaving, wait for the write in flight, however the run ends.

        A write error is raised; if the run is already raising, it goes on raising its own
        error, with the write's noted on it (and logged), so neither is lost.
        """
        try:
            yield
        except BaseException as raised:
            self._unannounced = []  # the run is failing: no listener is called any more
            error = self.writer.finish()
            if error is not None:
                log.error("Writing a checkpoint failed: %r", error)
                note = f"Writing a checkpoint failed too: {type(error).__name__}: {error}"
                add_note = getattr(raised, "add_note", None)
                if add_note is not None:
                    add_note(note)
            raise
        self.writer.wait()

    def _superseded(self, point: CheckpointId) -> list[CheckpointId]:
        """The committed mid-epoch checkpoints before `point` that no strategy keeps."""
        assert self.checkpointer is not None
        return [
            older
            for older in self.checkpointer.committed()
            if older.iteration is not None
            and older.sort_key() < point.sort_key()
            and not self.retention.keeps(older)
        ]

    # -- the writing thread ----------------------------------------------------------------

    def _write_epoch(
        self,
        epoch: int,
        point: CheckpointId,
        records: dict[str, Any] | None,
        doomed: list[CheckpointId],
    ) -> None:
        """The end of validation (epoch) `epoch`, in the background: its checkpoint, if
        saved, then the deletions it decided."""
        self._write(point, records, doomed)

    def _write(
        self, point: CheckpointId, records: dict[str, Any] | None, doomed: list[CheckpointId]
    ) -> None:
        """Commit `point`'s checkpoint (if `records`), then delete `doomed`: save first,
        never zero checkpoints."""
        assert self.checkpointer is not None
        if records is not None:
            self.checkpointer.save(point, records)
        for checkpoint in doomed:
            self.checkpointer.delete(checkpoint)

    # -- the loop's thread -----------------------------------------------------------------

    @staticmethod
    def _snapshot(state: TrainingState, records: dict[str, Any]) -> dict[str, Any]:
        """The records on the host, sharing no memory with the run (see `host_snapshot`)."""
        # Optimizer.to_record() copies its tensors already; the model's record is its storage.
        owned = {"optim"} if type(state.optim).to_record is Optimizer.to_record else set()
        return {part: host_snapshot(record, part in owned) for part, record in records.items()}

    def _records(self, state: TrainingState, end: RunEnd | None = None) -> dict[str, Any]:
        records = state.to_records()
        learner = records["learner"]
        learner["checkpointing_strategy"] = self.strategy.to_record()
        learner["checkpointing_rule"] = stopping_rule(self.strategy)
        learner["retention"] = self.retention.to_record()
        learner["end"] = end.to_record() if end is not None else None
        learner["line"] = self.line.to_record()
        return records

    # -- lineage ---------------------------------------------------------------------------

    def _finish_branch(self) -> Line | None:
        """Finish moving aside what a branch left, if a kill cut its start short; its line."""
        assert self.lineage is not None
        finished = self.lineage.finish_pending()
        if finished is None:
            return None
        line, archive = finished
        self.announce.info(
            f"Finished beginning a branch that a crash interrupted: the part it left is in "
            f"{archive}; this run continues the branch."
        )
        return line

    def _follow_line(
        self, state: TrainingState, point: ResumePoint, finished: Line | None = None
    ) -> None:
        """The line this run writes: the resumed checkpoint's, a branch that began at it (or
        whose start this run `finished`), or a new branch when `checkpoint(N)` goes back from
        later checkpoints or logs (rank 0)."""
        assert self.lineage is not None
        learner = point.records["learner"]
        line, step = Line.from_record(learner.get("line")), int(learner.get("step", 0))
        name = point.checkpoint.name
        if finished is not None and finished.origin == name:  # the same branch, started again
            self.line = finished
            archive = self.lineage.archive(finished)
            self.start = RunStart(StartKind.BRANCH, finished, name, step, archive)
            return
        current = self.lineage.current()
        leaving = current if current is not None else line  # the line the live logs show
        if current is not None and current.origin == name:
            line = current  # the branch began here, then stopped before its first checkpoint
        going_back = isinstance(self.resume_from, int) and not isinstance(self.resume_from, bool)
        if self.is_main and going_back and self._past(state, point):
            later = [c.name for c in self.lineage.later(point.checkpoint)]
            self.line, archive = self.lineage.begin(leaving, point.checkpoint, step)
            self.start = RunStart(StartKind.BRANCH, self.line, name, step, archive)
            moved = f"checkpoints {', '.join(later)} and " if later else ""
            self.announce.info(
                f"Branching from checkpoint {name} (line {self.line.number}): the run's later "
                f"{moved}logs were moved aside to {archive}; resume() continues this branch."
            )
            return
        self.line = line
        self.start = RunStart(StartKind.CONTINUE, line, name, step)

    def _past(self, state: TrainingState, point: ResumePoint) -> bool:
        """Whether checkpoints or metric logs of the run go past `point`."""
        assert self.lineage is not None
        if self.lineage.later(point.checkpoint):
            return True
        positions = point.records["learner"]["loggers"]
        return any(
            _logs_past(state.processor.splits[split].logger, positions[split.value])
            for split in (Split.TRAIN, Split.VALID)
        )

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
        saved, rule = records["learner"].get("checkpointing_strategy"), stopping_rule(self.strategy)
        was = records["learner"].get("checkpointing_rule", rule)  # from before rules: the same
        if saved is not None and was == rule:
            self.strategy.load_record(saved)
        elif saved is not None:  # its best epoch means something else: never merged
            state.changed.append(
                f"The checkpointing strategy changed since the checkpoint (it kept {was}, now "
                f"{rule}): it starts from a clean state; the checkpoints it kept stay."
            )
        self.retention.load_record(records["learner"].get("retention"), self._present(point))
        if self.is_main:  # drop log lines written after the checkpoint; other ranks log in memory
            positions = records["learner"]["loggers"]
            for split in (Split.TRAIN, Split.VALID):
                state.processor.splits[split].logger.truncate_to(positions[split.value])


def _logs_past(logger: object, positions: Any) -> bool:
    """Whether a file logger holds lines past `positions` (a later epoch, or more lines)."""
    from burnish.train.logger import FileMetricLogger
    from burnish.train.logger.base import check_positions

    if not isinstance(logger, FileMetricLogger):
        return False
    epoch, lines = check_positions(positions)
    if logger.epochs() > epoch:
        return True
    committed = {logger.file_path(name, epoch).name: count for name, count in lines.items()}
    return any(
        _line_count(path) > committed.get(path.name, 0)
        for path in logger.epoch_directory(epoch).glob("*.log")
    )


def _line_count(path: Path) -> int:
    with open(path, "rb") as file:
        return sum(1 for _ in file)

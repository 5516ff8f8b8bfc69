"""The loop's state: what a checkpoint holds, and how the learner returns to it exactly.

`LearnerState` is the part of `Learner` that snapshots and restores everything besides the
loop itself: model, optimizer and scheduler records, the position in the run, data loaders,
RNGs, metric states and log positions, strategies and accumulated gradients. See
docs/crash-safety.md for the guarantees.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from burnish.module import into_record, load_record
from burnish.train.batch_check import model_device
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.resume import ResumePoint, find_resume_point
from burnish.train.rng import load_rng_record, rng_record

__all__ = ["LearnerState", "Position"]

log = logging.getLogger("burnish.train")

TRAIN, VALID, DONE = "train", "valid", "done"


@dataclasses.dataclass
class Position:
    """Where the loop is: `phase` is "train" (after `iteration`), "valid" or "done"."""

    epoch: int = 1
    iteration: int = 0
    phase: str = TRAIN


class LearnerState:
    """Checkpoint and restore for `Learner` (which provides the attributes used here)."""

    def _state_record(self) -> dict[str, Any]:
        """Everything besides model/optim/scheduler needed to continue exactly from here."""
        self.processor.flush(self.position.epoch)
        return {
            "position": dataclasses.asdict(self.position),
            "loaders": {
                "start": dict(self._loader_records),
                "now": {s: loader_record(d) for s, d in zip((TRAIN, VALID), self.dataloaders)},
            },
            "rng": rng_record(),
            "metrics": self.processor.to_record(),
            "loggers": {
                split: state.logger.positions(self._log_epoch(split))
                for split, state in self.processor.splits.items()
            },
            "early_stopping": _record_of(self.options.early_stopping),
            "checkpointing_strategy": _record_of(self.options.checkpointing_strategy),
            "accumulator": self.accumulator.to_record() if self.accumulated else None,
            "accumulated": self.accumulated,
            "world_size": self.context.world_size,
        }

    def _log_epoch(self, split: str) -> int:
        """The epoch a split's log continues with: the next one once the split has ended."""
        ended = {TRAIN: (VALID, DONE), VALID: (DONE,)}[split]
        return self.position.epoch + (self.position.phase in ended)

    def _records(self) -> dict[str, Any]:
        return {
            "model": into_record(self.model),
            "optim": self.optim.to_record(),
            "scheduler": self.lr_scheduler.to_record(),
            "learner": self._state_record(),
        }

    def _save_iteration_checkpoint(self) -> None:
        checkpointer = self.options.checkpointer
        if checkpointer is None:
            return
        self.processor.flush(self.position.epoch)  # a collective with several ranks
        if not self.context.is_main:
            return
        point = CheckpointId(self.position.epoch, self.position.iteration)
        checkpointer.save(point, self._records())
        for older in checkpointer.committed():
            if older.iteration is not None and older.sort_key() < point.sort_key():
                checkpointer.delete(older)

    def _save_epoch_checkpoint(self, epoch: int) -> None:
        checkpointer = self.options.checkpointer
        if checkpointer is None:
            return
        actions = self.options.checkpointing_strategy.checkpointing(epoch, self.options.store())
        self.processor.flush(self.position.epoch)
        if not self.context.is_main:
            return
        if any(action.is_save for action in actions):  # save first: never zero checkpoints
            checkpointer.save(CheckpointId(epoch), self._records())
        for action in actions:
            if action.is_delete:
                checkpointer.delete(CheckpointId(action.epoch))
        for older in checkpointer.committed():  # mid-epoch checkpoints are superseded
            if older.iteration is not None and older.epoch <= epoch:
                checkpointer.delete(older)

    def _restore(self) -> None:
        point = find_resume_point(
            self.options, clean=self.context.is_main, wait=self.context.barrier
        )
        if point is None:
            return
        self._load_point(point)
        log.info("Resumed from checkpoint %s.", point.checkpoint.name)

    def _load_point(self, point: ResumePoint) -> None:
        records = point.records
        device = model_device(self.model)
        load_record(self.model, records["model"])
        self.model.to(device)
        self.optim.load_record(records["optim"])
        self.lr_scheduler.load_record(records["scheduler"])
        state = records["learner"]
        self.position = Position(**state["position"])
        self._restore_loaders(state["loaders"])
        if self.position.phase == DONE:  # an epoch checkpoint: start the next epoch
            self.position = Position(self.position.epoch + 1)
        load_rng_record(state["rng"])
        self.processor.load_record(state["metrics"])
        self._restore_logs(state["loggers"])
        for name in ("early_stopping", "checkpointing_strategy"):
            part = getattr(self.options, name)
            if part is not None and state[name] is not None:
                part.load_record(state[name])
        self.accumulated = state["accumulated"]
        if state["accumulator"] is not None:
            self.accumulator.load_record(state["accumulator"], self.model)

    def _restore_loaders(self, records: dict[str, Any]) -> None:
        """A split still running restarts from its epoch-start state, else from 'now'."""
        self._loader_records = dict(records["start"])
        running = {TRAIN: self.position.phase == TRAIN, VALID: self.position.phase == VALID}
        for split, loader in zip((TRAIN, VALID), self.dataloaders):
            record = records["start" if running[split] else "now"].get(split)
            if record is not None and not running[split]:
                record = {"epoch": record["epoch"]}  # a finished epoch: any world size
            if record is not None:
                loader.load_record(record)

    def _restore_logs(self, positions: dict[str, Any]) -> None:
        """Drop log lines written after the checkpoint (the loggers remove later epochs too).

        Ranks other than 0 log in memory and start a resumed run empty: nothing to drop.
        """
        if not self.context.is_main:
            return
        for split, state in self.processor.splits.items():
            state.logger.truncate_to(positions[split])


def loader_record(loader: Any) -> Any:
    """A data loader's record, or None for loaders without one (torch's)."""
    return loader.to_record() if hasattr(loader, "to_record") else None


def _record_of(part: Any) -> Any:
    return part.to_record() if part is not None and hasattr(part, "to_record") else None

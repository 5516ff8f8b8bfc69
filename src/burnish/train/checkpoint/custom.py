"""Checkpointers of your own for the model, optimizer and scheduler records (Burn main's
`with_custom_checkpointers(model, optim, scheduler)` given three `Checkpointer`s).

Burn's learner calls each checkpointer with the epoch: `save(epoch, record)` at the end of an
epoch the checkpointing strategy saves, `delete(epoch)` for an epoch it drops, `restore(epoch)`
when the run starts from `checkpoint(epoch)`. burnish does the same, and keeps what an exact
resume needs beyond those three records (the loop's position, RNG states, metric state, data
order, the strategy's and early stopping's state, the EMA) in its own committed checkpoint
directory `checkpoint/epoch-N/` (`learner.bpk` and a `COMMIT` file):

- an epoch checkpoint calls the three `save`s first, then commits its directory, so a committed
  checkpoint is one whose records your checkpointers took: a crash in between leaves an
  uncommitted directory, never loaded;
- `delete` removes the directory, then calls the three `delete`s;
- loading an epoch checkpoint reads the directory, then the three `restore`s; a `restore` that
  fails is a `CheckpointError` naming the part, and `resume()` falls back to an older checkpoint;
- mid-epoch checkpoints (`checkpoint_every`, an interruption, `valid_every`) have no epoch to
  hand to Burn's trait: burnish writes their three records itself, in the same directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from burnish.errors import CheckpointError
from burnish.train.checkpoint.base import is_checkpointer, restore_record
from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer

__all__ = ["CustomCheckpointers", "check_checkpointers"]


class CustomCheckpointers(FileCheckpointer):
    """burnish's checkpoint directories, with the model, optimizer and scheduler records of
    each epoch checkpoint handed to your checkpointers (see the module docstring).

    Args:
        directory: where burnish's own part of each checkpoint goes (`<artifact_dir>/checkpoint`).
        model: the checkpointer of the model's record (a `ModuleRecord`).
        optim: the checkpointer of the optimizer's record (`optim.to_record()`).
        scheduler: the checkpointer of the scheduler's record (`lr_scheduler.to_record()`).

    Raises:
        TypeError: if a checkpointer lacks `save`, `delete` or `restore`.
    """

    def __init__(self, directory: str | os.PathLike, model: Any, optim: Any, scheduler: Any):
        from burnish.record.store.recorder import BurnpackFileRecorder  # torch: not at import

        super().__init__(directory, BurnpackFileRecorder())
        self.parts = check_checkpointers(model, optim, scheduler)

    def __repr__(self) -> str:
        inner = ", ".join(f"{part}={type(c).__name__}" for part, c in self.parts.items())
        return f"CustomCheckpointers({inner})"

    def save(self, checkpoint: CheckpointId | int, records: dict[str, Any]) -> Path:
        """Hand an epoch checkpoint's three records to your checkpointers, then commit the
        rest; a mid-epoch checkpoint is written whole by burnish."""
        checkpoint = _checkpoint_id(checkpoint)
        if checkpoint.iteration is not None:
            return super().save(checkpoint, records)
        from burnish.record.store.module_record import ModuleRecord  # torch: not at import

        own = dict(records)
        for part, checkpointer in self.parts.items():
            record = own.pop(part)
            if part == "model" and not isinstance(record, ModuleRecord):
                record = ModuleRecord(record)
            checkpointer.save(checkpoint.epoch, record)
        return super().save(checkpoint, own)

    def load(self, checkpoint: CheckpointId | int, device: Any = None) -> dict[str, Any]:
        """burnish's records of the checkpoint, and your checkpointers' three of an epoch.

        Raises:
            CheckpointError: if the directory is missing or damaged, or a `restore` fails.
        """
        checkpoint = _checkpoint_id(checkpoint)
        records = super().load(checkpoint, device)
        for part, checkpointer in self.parts.items():
            if part not in records:  # an epoch checkpoint: the record is yours
                records[part] = self._restore(part, checkpointer, checkpoint.epoch, device)
        return records

    def delete(self, checkpoint: CheckpointId | int) -> None:
        """Remove the checkpoint directory, then your checkpointers' records of the epoch."""
        checkpoint = _checkpoint_id(checkpoint)
        super().delete(checkpoint)
        if checkpoint.iteration is None:
            for checkpointer in self.parts.values():
                checkpointer.delete(checkpoint.epoch)

    @staticmethod
    def _restore(part: str, checkpointer: Any, epoch: int, device: Any) -> Any:
        try:
            record = restore_record(checkpointer, epoch, device)
        except CheckpointError:
            raise
        except Exception as error:
            raise CheckpointError(
                f"The `{part}` checkpointer ({type(checkpointer).__name__}) cannot restore "
                f"epoch {epoch}: {type(error).__name__}: {error}. Resume with the "
                "checkpointers that saved the run, or from another epoch."
            ) from error
        if record is None:
            raise CheckpointError(
                f"The `{part}` checkpointer ({type(checkpointer).__name__}) restored None for "
                f"epoch {epoch}. Its `restore(epoch)` must return the record `save` was given."
            )
        return record


def check_checkpointers(model: Any, optim: Any, scheduler: Any) -> dict[str, Any]:
    """The three checkpointers by part.

    Raises:
        TypeError: naming the first one that lacks `save`, `delete` or `restore`.
    """
    parts = {"model": model, "optim": optim, "scheduler": scheduler}
    for part, checkpointer in parts.items():
        if not is_checkpointer(checkpointer):
            raise TypeError(
                f"with_custom_checkpointers: the `{part}` checkpointer needs Burn's "
                "Checkpointer methods `save(epoch, record)`, `delete(epoch)` and "
                f"`restore(epoch)`. Received: {type(checkpointer).__name__}. Write a class "
                "with these three methods, or pass three recorders (e.g. BurnpackFileRecorder())."
            )
    return parts


def _checkpoint_id(checkpoint: CheckpointId | int) -> CheckpointId:
    return CheckpointId(checkpoint) if isinstance(checkpoint, int) else checkpoint

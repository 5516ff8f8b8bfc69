"""How a run ended, recorded in the checkpoint of its last epoch, and what a resume finds.

A run ends when early stopping stops it or when its last epoch is done. The checkpoint of that
epoch says so (`RunEnd`), so `resume()` of an ended run trains nothing: it reports the run
complete and returns what the run returned. A run that completed `num_epochs` epochs continues
when it is resumed with more; a run that stopped early stays stopped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from burnish.errors import RecordError

__all__ = ["Resumed", "RunEnd"]


@dataclasses.dataclass(frozen=True)
class RunEnd:
    """The end of a run: its last epoch, and whether early stopping ended it there.

    Attributes:
        epoch: the last epoch (the number of epochs the run completed).
        stopped_early: whether early stopping ended the run (else its epochs were all done).
    """

    epoch: int
    stopped_early: bool = False

    @classmethod
    def after(cls, epoch: int, num_epochs: int, stopped_early: bool) -> RunEnd | None:
        """The end reached after `epoch`, or None if the run goes on."""
        if stopped_early or epoch >= num_epochs:
            return cls(epoch, stopped_early)
        return None

    def to_record(self) -> dict[str, Any]:
        """`{"epoch": int, "stopped_early": bool}`."""
        return {"epoch": self.epoch, "stopped_early": self.stopped_early}

    @classmethod
    def from_record(cls, record: Any) -> RunEnd | None:
        """The end `to_record()` describes; None for a record of a run that had not ended.

        Raises:
            RecordError: if `record` is neither None nor a `to_record()` dict.
        """
        if record is None:
            return None
        if not isinstance(record, dict) or set(record) != {"epoch", "stopped_early"}:
            raise RecordError(
                f"A run-end record must be None or a dict with `epoch` and `stopped_early`. "
                f"Received: {record!r}. The checkpoint's `learner` record is damaged."
            )
        return cls(int(record["epoch"]), bool(record["stopped_early"]))


@dataclasses.dataclass(frozen=True)
class Resumed:
    """The checkpoint a run resumed from, and how far the run had come.

    Attributes:
        checkpoint: the checkpoint directory.
        epochs_completed: the epochs done before it (an epoch checkpoint's own included).
        end: how the run ended, if that checkpoint is the last of an ended run.
    """

    checkpoint: Path
    epochs_completed: int
    end: RunEnd | None = None

    @property
    def stopped_early(self) -> bool:
        """Whether early stopping ended the run."""
        return self.end is not None and self.end.stopped_early

    def is_over(self, num_epochs: int) -> bool:
        """Whether a run of `num_epochs` epochs has nothing left to train."""
        return self.stopped_early or self.epochs_completed >= num_epochs

    def describe(self) -> str:
        """The line that tells the user the run is complete and where its model is."""
        epochs = f"{self.epochs_completed} epoch{'s' if self.epochs_completed != 1 else ''}"
        how = "early stopping ended it" if self.stopped_early else "raise `num_epochs` to go on"
        return (
            f"Training is already complete: {epochs}, nothing left to train ({how}). "
            f"Its final checkpoint is {self.checkpoint}."
        )

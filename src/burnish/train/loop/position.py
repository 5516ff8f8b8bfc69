"""Where a run is: the epoch, the iteration within it, and which phase of the epoch."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

from burnish.train.split import Split

__all__ = ["Phase", "Position"]


class Phase(str, enum.Enum):
    """The part of an epoch the loop is in: training, validating, or done with the epoch."""

    TRAIN = "train"
    VALID = "valid"
    DONE = "done"

    def __str__(self) -> str:
        return self.value


@dataclasses.dataclass
class Position:
    """Where the loop is: after `iteration` of `epoch`'s train split, or in a later `phase`."""

    epoch: int = 1
    iteration: int = 0
    phase: Phase = Phase.TRAIN

    def log_epoch(self, split: Split) -> int:
        """The epoch `split`'s log continues with: the next one once the split has ended."""
        ended = {Split.TRAIN: (Phase.VALID, Phase.DONE), Split.VALID: (Phase.DONE,)}[split]
        return self.epoch + (self.phase in ended)

    def running(self, split: Split) -> bool:
        """Whether `split`'s epoch has started and not ended."""
        return self.phase.value == split.value

    def to_record(self) -> dict[str, Any]:
        """`{"epoch", "iteration", "phase"}` as plain values."""
        return {"epoch": self.epoch, "iteration": self.iteration, "phase": self.phase.value}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Position:
        """The position a `to_record()` describes."""
        return cls(record["epoch"], record["iteration"], Phase(record["phase"]))

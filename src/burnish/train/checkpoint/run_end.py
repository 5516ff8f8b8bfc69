"""How a run ended, recorded in the checkpoint of its last epoch, and what a resume finds.

A run ends when early stopping stops it, when its last epoch is done, or when its step budget
(`max_iterations`) is spent. The checkpoint of that epoch says so (`RunEnd`), so `resume()` of
an ended run trains nothing: it reports the run complete and returns what the run returned. A
run that completed `num_epochs` epochs continues when it is resumed with more (one that spent
its budget, with a larger budget: from the next epoch); a run that stopped early stays stopped.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from burnish.errors import ConfigError, RecordError
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.loop.position import Phase, Position

__all__ = ["Resumed", "RunEnd", "resume_line"]


@dataclasses.dataclass(frozen=True)
class RunEnd:
    """The end of a run: its last epoch, and what ended it there.

    Attributes:
        epoch: the last epoch (the number of epochs the run completed).
        stopped_early: whether early stopping ended the run.
        max_iterations_reached: whether the step budget (`max_iterations`) ended it (else, and
            not stopped early, its epochs were all done).
    """

    epoch: int
    stopped_early: bool = False
    max_iterations_reached: bool = False

    @classmethod
    def after(
        cls,
        epoch: int,
        num_epochs: int,
        stopped_early: bool,
        max_iterations_reached: bool = False,
    ) -> RunEnd | None:
        """The end reached after `epoch`, or None if the run goes on."""
        if stopped_early or max_iterations_reached or epoch >= num_epochs:
            return cls(epoch, stopped_early, max_iterations_reached)
        return None

    def to_record(self) -> dict[str, Any]:
        """`{"epoch": int, "stopped_early": bool, "max_iterations_reached": bool}`."""
        return {
            "epoch": self.epoch,
            "stopped_early": self.stopped_early,
            "max_iterations_reached": self.max_iterations_reached,
        }

    @classmethod
    def from_record(cls, record: Any) -> RunEnd | None:
        """The end `to_record()` describes; None for a record of a run that had not ended.

        Raises:
            RecordError: if `record` is neither None nor a `to_record()` dict.
        """
        if record is None:
            return None
        keys = set(record) if isinstance(record, dict) else set()
        if not {"epoch", "stopped_early"} <= keys <= {*_FIELDS}:
            raise RecordError(
                f"A run-end record must be None or a dict with `epoch` and `stopped_early` "
                f"(and `max_iterations_reached`). Received: {record!r}. The checkpoint's "
                "`learner` record is damaged."
            )
        reached = bool(record.get("max_iterations_reached", False))
        return cls(int(record["epoch"]), bool(record["stopped_early"]), reached)


_FIELDS = ("epoch", "stopped_early", "max_iterations_reached")


@dataclasses.dataclass(frozen=True)
class Resumed:
    """The checkpoint a run resumed from, and how far the run had come.

    Attributes:
        checkpoint: the checkpoint directory.
        epochs_completed: the epochs done before it (an epoch checkpoint's own included).
        end: how the run ended, if that checkpoint is the last of an ended run.
        optimizer_steps: the optimizer steps taken before it.
        in_epoch: whether it was taken inside epoch `epochs_completed + 1` (mid-epoch).
    """

    checkpoint: Path
    epochs_completed: int
    end: RunEnd | None = None
    optimizer_steps: int = 0
    in_epoch: bool = False

    def check_epochs(self, num_epochs: int | None) -> None:
        """Refuse a run of `num_epochs` epochs that this checkpoint has already gone past.

        Its model has trained beyond the last epoch asked for: returning it as that run's
        result would be wrong, and training on would be too. Branching from the epoch asked
        for (`checkpoint(num_epochs)`) is what such a run means.

        Raises:
            ConfigError: naming `num_epochs`, the checkpoint and how far it reached.
        """
        if num_epochs is None:
            return
        done = self.epochs_completed
        if done < num_epochs or (done == num_epochs and not self.in_epoch):
            return
        reached = f"inside epoch {done + 1}" if self.in_epoch else f"after {done} epochs"
        raise ConfigError(
            f"num_epochs({num_epochs}) is below what checkpoint {self.checkpoint.name} reached "
            f"({reached}): its model has trained past epoch {num_epochs}. Use "
            f"`checkpoint({num_epochs})` to branch from the end of epoch {num_epochs}, or "
            f"`num_epochs({done + self.in_epoch})` or more to continue this line."
        )

    @property
    def stopped_early(self) -> bool:
        """Whether early stopping ended the run."""
        return self.end is not None and self.end.stopped_early

    def is_over(self, num_epochs: int | None, max_iterations: int | None = None) -> bool:
        """Whether a run of `num_epochs` epochs (None: no bound) and `max_iterations` optimizer
        steps (None: no budget) has nothing left to train."""
        if self.stopped_early:
            return True
        spent = max_iterations is not None and self.optimizer_steps >= max_iterations
        if spent and self.end is not None:  # a budget reached mid-epoch still ends its epoch
            return True
        return num_epochs is not None and self.epochs_completed >= num_epochs

    def describe(self) -> str:
        """The line that tells the user the run is complete and where its model is."""
        epochs = f"{self.epochs_completed} epoch{'s' if self.epochs_completed != 1 else ''}"
        if self.stopped_early:
            how = "early stopping ended it"
        elif self.end is not None and self.end.max_iterations_reached:
            epochs += f", {self.optimizer_steps} optimizer steps"
            how = "raise `max_iterations` to go on"
        else:
            how = "raise `num_epochs` to go on"
        return (
            f"Training is already complete: {epochs}, nothing left to train ({how}). "
            f"Its final checkpoint is {self.checkpoint}."
        )


def resume_line(
    checkpoint: CheckpointId, step: int, position: Position, validating: bool = False
) -> str:
    """The line that tells where a resumed run continues (`validating`: with the validation
    inside the epoch that a stop cut short, redone first).

    Example:
        >>> resume_line(CheckpointId(2), 20, Position(3))
        'Resumed from checkpoint epoch-2, iteration 20: training continues with epoch 3.'
    """
    head = f"Resumed from checkpoint {checkpoint.name}, iteration {step}: "
    epoch = position.epoch
    if position.phase is Phase.VALID:
        return head + f"epoch {epoch}'s validation runs next."
    if position.iteration and validating:
        return head + (
            f"the validation after iteration {position.iteration} of epoch {epoch}, cut short, "
            "runs again next; then training continues."
        )
    if position.iteration:
        return head + f"training continues in epoch {epoch} after iteration {position.iteration}."
    return head + f"training continues with epoch {epoch}."

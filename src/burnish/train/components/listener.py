"""`TrainingListener`: user code called at the moments of a run, with typed, read-only events.

A listener subclasses `TrainingListener` and overrides the methods it needs; each receives a
frozen event. The events carry what the learner already knows on the host: positions, the
learning rate, and metric values already read back by the metrics processor. A listener never
makes the learner read anything extra from the device.

When each method is called (train/README.md has the whole order):

- `on_fit_start`: once the checkpoint to resume from (if any) is loaded, before the first
  iteration.
- `on_iteration_end`: after every iteration of both splits, once its metrics are updated.
  `event.values` holds the iteration's metric values when the processor read them back at this
  iteration (at the dashboard's pace, ~10 Hz, every 32 iterations at the latest, and every 16
  under several ranks), else None.
- `on_epoch_end`: after the last training iteration of an epoch, with its epoch values.
- `on_validation_end`: after each validation, with its epoch values.
- `on_checkpoint`: once a checkpoint is committed (on the rank that writes, rank 0). Checkpoints
  are written in the background, so it comes when the loop next waits for the writer: at the
  next checkpoint, or at the end of the run (before `on_fit_end`); `step` is the checkpoint's.
- `on_fit_end`: when `fit` returns normally (finished, stopped early or interrupted).

A resumed run that had already ended trains nothing and calls no listener; a run that fails
with an exception does not call `on_fit_end`.

A listener that has `to_record()` and `load_record(record)` is checkpointed: its record is in
every checkpoint and loaded on resume, so its state continues exactly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.train.split import Split

if TYPE_CHECKING:
    from torch import nn

    from burnish.train.interrupter import Interrupter

__all__ = [
    "CheckpointEvent",
    "EpochEndEvent",
    "FitEndEvent",
    "FitStartEvent",
    "IterationEndEvent",
    "ListenerEvent",
    "SplitEvent",
    "TrainingListener",
    "ValidationEndEvent",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ListenerEvent:
    """What every event carries.

    Attributes:
        epoch: the current epoch (1-based).
        step: training iterations since the run began (the trackers' global step).
        interrupter: the run's interrupter; `stop(reason)` asks through it.
    """

    epoch: int
    step: int
    interrupter: Interrupter = dataclasses.field(repr=False, compare=False)

    def stop(self, reason: str) -> None:
        """Stop the run as `q` or Ctrl-C do: after this iteration, with a checkpoint.

        The run can then be resumed (`resume()`); an `EarlyStoppingStrategy` ends a run for
        good instead. Under several ranks the ranks agree on it at their next metric sync.
        """
        self.interrupter.stop(reason)

    def log(self, name: str, value: Any) -> None:
        """Values are logged in a split's events only (see `SplitEvent.log`).

        Raises:
            TypeError: always: this event belongs to no split.
        """
        raise TypeError(
            f"`event.log({name!r}, ...)` in {type(self).__name__}: a value is logged in a "
            "split's events only (`on_iteration_end`, `on_epoch_end`, `on_validation_end`), "
            "where it joins that split's metrics."
        )


LogValue = Callable[[str, Any], None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class SplitEvent(ListenerEvent):
    """An event of a split's iteration or epoch: values can be logged beside its metrics."""

    log_to: LogValue | None = dataclasses.field(default=None, repr=False, compare=False)

    def log(self, name: str, value: Any) -> None:
        """Log `value` (a number or a one-element tensor) as `name` in this event's split.

        Lightning's `self.log` in a callback: the value is written to the split's metric log
        (`<split>/epoch-N/<name>.log`, one line per call) and its epoch value (the mean of
        the epoch's values) joins the metrics' epoch values: in the summary, on the dashboard
        and in every tracker. Logged at `on_epoch_end`/`on_validation_end`, it is that epoch's
        value; logged at `on_iteration_end`, one entry of the epoch. A tensor is read back
        (one sync): log them at read-backs (`event.values is not None`) or at epoch ends.

        Raises:
            ValueError: if `name` is a metric of the split, or `value` not one number.
        """
        if self.log_to is None:
            raise RuntimeError("event.log works only during fit, in the listener's own call.")
        self.log_to(name, value)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FitStartEvent(ListenerEvent):
    """Training is about to start (or continue, when `resumed`).

    Attributes:
        iteration: the training iterations of `epoch` already done (0 unless resumed).
        num_epochs: the epochs of the run.
        resumed: whether the run continues from a checkpoint.
        model: the model being trained (do not change it).
    """

    iteration: int
    num_epochs: int
    resumed: bool
    model: nn.Module = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class IterationEndEvent(SplitEvent):
    """An iteration of `split` ended.

    Attributes:
        split: `Split.TRAIN` or `Split.VALID`.
        iteration: the iteration within the split's epoch (1-based).
        lr: the iteration's learning rate (None in validation).
        values: the iteration's numeric metric values, read-only, when the processor read
            them back at this iteration; None at the other iterations.
        model: the model being trained (do not change it).
    """

    split: Split
    iteration: int
    lr: float | None
    values: Mapping[str, float] | None
    model: nn.Module = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _SplitEndEvent(SplitEvent):
    """The fields of a split's end: its epoch values."""

    split: Split
    iteration: int
    values: Mapping[str, float]
    model: nn.Module = dataclasses.field(repr=False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EpochEndEvent(_SplitEndEvent):
    """The training split of `epoch` ended (validation comes next).

    Attributes:
        split: `Split.TRAIN`.
        iteration: the epoch's training iterations.
        values: each numeric training metric's epoch value (read-only).
        model: the model being trained (do not change it).
    """


@dataclasses.dataclass(frozen=True, kw_only=True)
class ValidationEndEvent(_SplitEndEvent):
    """A validation ended; its checkpoint and early stopping's decision come next.

    Attributes:
        split: `Split.VALID`.
        iteration: the training iterations of `epoch` done when it ran.
        values: each numeric validation metric's value over the validation (read-only).
        model: the model being trained (do not change it).
    """


@dataclasses.dataclass(frozen=True, kw_only=True)
class CheckpointEvent(ListenerEvent):
    """A checkpoint was saved.

    Attributes:
        iteration: the training iteration it was taken at, None for an epoch checkpoint.
        path: its directory (`checkpoint/epoch-N` or `checkpoint/epoch-N-iteration-K`).
    """

    iteration: int | None
    path: Path


@dataclasses.dataclass(frozen=True, kw_only=True)
class FitEndEvent(ListenerEvent):
    """`fit` is returning.

    Attributes:
        epochs_completed: the epochs finished (validation and checkpoint included).
        interrupted: whether it stopped early on request (`stop`, `q`, Ctrl-C).
        stopped_early: whether early stopping ended it.
        model: the trained model.
    """

    epochs_completed: int
    interrupted: bool
    stopped_early: bool
    model: nn.Module = dataclasses.field(repr=False)


class TrainingListener:
    """Code of yours called at the moments of a run (`with_listener(listener)`).

    Override the methods you need; each is a no-op by default. Listeners are called in the
    order they were added, on rank 0 only unless the class sets `all_ranks = True`. An
    exception raised by a listener fails the run, as one raised by a step would.

    To be checkpointed, define `to_record()` (a record: dicts, lists, tensors, numbers,
    strings) and `load_record(record)`: the record is in every checkpoint and loaded on
    resume, so the listener's state continues exactly. Under several ranks the checkpoint holds
    rank 0's record and every rank loads it.

    Attributes:
        all_ranks: call this listener on every rank, not only on rank 0.

    Example:
        >>> from burnish.train import TrainingListener
        >>> class StopAtLoss(TrainingListener):
        ...     def on_validation_end(self, event):
        ...         if event.values["Loss"] < 0.1:
        ...             event.stop("validation loss below 0.1")
    """

    all_ranks: bool = False

    def on_fit_start(self, event: FitStartEvent) -> None:
        """Training starts, or continues after a resume."""

    def on_iteration_end(self, event: IterationEndEvent) -> None:
        """An iteration of either split ended; `event.values` is None unless read back."""

    def on_epoch_end(self, event: EpochEndEvent) -> None:
        """The training split of an epoch ended."""

    def on_validation_end(self, event: ValidationEndEvent) -> None:
        """A validation ended."""

    def on_checkpoint(self, event: CheckpointEvent) -> None:
        """A checkpoint was saved (rank 0)."""

    def on_fit_end(self, event: FitEndEvent) -> None:
        """`fit` returns."""

"""`Listeners`: the run's `TrainingListener`s as one component, checkpointed with the run.

The loop tells it what happened in its terms (a split, the metadata of an iteration, the
epoch values the processor read back); it builds the events from the run's `TrainingState`
(epoch, global step, model) and calls each listener of this rank: all of them on rank 0,
those with `all_ranks = True` elsewhere. It adds nothing to the device: the values it passes
on are the ones the processor already read back. The split events' `log` writes through the
run's processor (`MetricsProcessor.log`).

A validation interrupted midway is redone on resume (its metrics and log lines are dropped),
so the stateful listeners' records are taken at each validation's start and put back when one
is interrupted: the checkpoint then holds the listeners as they were before it.
"""

from __future__ import annotations

import copy
import logging
import types
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from burnish.train.components.component import Component
from burnish.train.components.listener import (
    CheckpointEvent,
    EpochEndEvent,
    FitEndEvent,
    FitStartEvent,
    IterationEndEvent,
    TrainingListener,
    ValidationEndEvent,
)
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.checkpoint.file import CheckpointId
    from burnish.train.components.loop_view import LoopView
    from burnish.train.interrupter import Interrupter
    from burnish.train.loop.result import TrainingResult
    from burnish.train.metric.base import MetricMetadata

__all__ = ["Listeners", "is_stateful"]

log = logging.getLogger("burnish.train")


def is_stateful(listener: object) -> bool:
    """Whether `listener` is checkpointed: it has `to_record` and `load_record`."""
    return callable(getattr(listener, "to_record", None)) and callable(
        getattr(listener, "load_record", None)
    )


class Listeners(Component):
    """The listeners this rank calls, in the order they were added.

    Args:
        listeners: every listener of the run (`with_listener`).
        interrupter: the run's interrupter, carried by every event.
        is_main: whether this is rank 0, which calls every listener; other ranks call those
            with `all_ranks = True`.
    """

    key: ClassVar[str | None] = "listeners"

    def __init__(
        self, listeners: Sequence[TrainingListener], interrupter: Interrupter, is_main: bool
    ) -> None:
        self.active = [
            (index, listener)
            for index, listener in enumerate(listeners)
            if is_main or listener.all_ranks
        ]
        self.interrupter = interrupter
        self.run: LoopView | None = None
        self._before_validation: dict[str, Any] = {}

    def bind(self, run: LoopView) -> None:
        self.run = run

    # -- the run's moments -----------------------------------------------------------------

    def fit_start(self, resumed: bool) -> None:
        if not self.active:
            return
        run = self._run()
        state = run.state
        event = FitStartEvent(
            **self._common(state.position.epoch),
            iteration=state.position.iteration,
            num_epochs=run.num_epochs,
            resumed=resumed,
            model=state.model,
        )
        for listener in self._listeners():
            listener.on_fit_start(event)

    def iteration_end(
        self, split: Split, metadata: MetricMetadata, values: Mapping[str, float] | None
    ) -> None:
        if not self.active:
            return
        event = IterationEndEvent(
            **self._common(metadata.epoch),
            split=split,
            iteration=metadata.iteration,
            lr=metadata.lr,
            values=None if values is None else _read_only(values),
            model=self._run().state.model,
            log_to=self._log_to(split, metadata.epoch),
        )
        for listener in self._listeners():
            listener.on_iteration_end(event)

    def split_end(self, split: Split, epoch: int, values: MutableMapping[str, float]) -> None:
        """The train split of `epoch` ended (`on_epoch_end`), or validation `epoch` did
        (`on_validation_end`, with the training epoch it ran in)."""
        if not self.active:
            return
        state = self._run().state
        shown = epoch if split is Split.TRAIN else state.position.epoch
        kind = EpochEndEvent if split is Split.TRAIN else ValidationEndEvent
        event = kind(
            **self._common(shown),
            split=split,
            iteration=state.position.iteration,
            values=_read_only(values),
            model=state.model,
            log_to=self._log_to(split, epoch),
        )
        for listener in self._listeners():
            if split is Split.TRAIN:
                listener.on_epoch_end(event)  # type: ignore[arg-type]
            else:
                listener.on_validation_end(event)  # type: ignore[arg-type]

    def validation_start(self, epoch_end: bool) -> None:
        """Keep the stateful listeners' records, in case the validation is interrupted."""
        self._before_validation = self.to_record()

    def validation_interrupted(self) -> None:
        """Put the records of the validation's start back: it is redone on resume."""
        self.load_record(self._before_validation, [])

    def checkpoint(self, point: CheckpointId, path: Path, step: int | None = None) -> None:
        """A checkpoint was committed at `path` (called by the checkpointer, rank 0, once its
        background write committed); `step`: the global step it was taken at (default: now)."""
        if not self.active:
            return
        common = self._common(point.epoch)
        if step is not None:
            common["step"] = step
        event = CheckpointEvent(**common, iteration=point.iteration, path=path)
        for listener in self._listeners():
            listener.on_checkpoint(event)

    def fit_end(self, result: TrainingResult) -> None:
        if not self.active:
            return
        state = self._run().state
        event = FitEndEvent(
            **self._common(state.position.epoch),
            epochs_completed=result.epochs_completed,
            interrupted=result.interrupted,
            stopped_early=result.stopped_early,
            model=result.model,
        )
        for listener in self._listeners():
            listener.on_fit_end(event)

    # -- records ---------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The stateful listeners' records, keyed by their place among the run's listeners."""
        return {
            str(index): {"type": _type_name(listener), "record": _record_of(listener)}
            for index, listener in self.active
            if is_stateful(listener)
        }

    def load_record(self, record: Mapping[str, Any] | None, changed: list[str]) -> None:
        """Give each stateful listener its record; one without a record starts afresh."""
        saved = record or {}
        for index, listener in self.active:
            if not is_stateful(listener):
                continue
            entry = saved.get(str(index))
            if entry is None or entry.get("type") != _type_name(listener):
                found = None if entry is None else entry.get("type")
                log.warning(
                    "The checkpoint has no state for listener %d (%s; found: %s): it starts "
                    "afresh. Add the listeners of the checkpointed run in the same order.",
                    index,
                    _type_name(listener),
                    found,
                )
                continue
            listener.load_record(copy.deepcopy(entry["record"]))  # type: ignore[attr-defined]

    # -- helpers ---------------------------------------------------------------------------

    def _listeners(self) -> list[TrainingListener]:
        return [listener for _, listener in self.active]

    def _run(self) -> LoopView:
        assert self.run is not None, "Listeners.bind(run) comes before the run starts"
        return self.run

    def _common(self, epoch: int) -> dict[str, Any]:
        return {"epoch": epoch, "step": self._run().state.step, "interrupter": self.interrupter}

    def _log_to(self, split: Split, epoch: int) -> Any:
        """What the split event's `log` calls: the processor's log of `split`'s `epoch`."""
        processor = self._run().processor
        return lambda name, value: processor.log(split, epoch, name, value)


def _read_only(values: Mapping[str, float]) -> Mapping[str, float]:
    return types.MappingProxyType(dict(values))


def _record_of(listener: Any) -> Any:
    """A copy: the listener may change what its `to_record` returned after it returns."""
    return copy.deepcopy(listener.to_record())


def _type_name(listener: object) -> str:
    return type(listener).__name__

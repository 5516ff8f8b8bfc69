"""Validation inside an epoch (`valid_every(k)`): when it is due, what it leaves untouched, and
where each validation was taken.

A validation is due right after the optimizer step that brings the run's step count to a
multiple of `k`, unless the epoch ends at that iteration or the step budget is spent there:
the epoch's own validation follows then, so one validation serves both. A run stopped or killed
between that step and the validation's checkpoint finds it still due when it resumes (the state
records the step count of the last validation) and runs it first.

A validation inside an epoch changes nothing training depends on: the random generators are
put back as they were, and the model is back in `train()` mode. Training therefore goes on as if
there had been no validation, and a resumed run is bit-identical to an uninterrupted one.

Each validation is its own epoch of the valid split's logs (`valid/epoch-N`, N counting
validations); with file logs, `valid/validations.json` records where each was taken (see
logger/validations.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from burnish.train.checkpoint.file import CheckpointId
from burnish.train.checkpoint.rng import preserved_rng
from burnish.train.components.component import Component
from burnish.train.logger.validations import (
    ValidationPoint,
    read_validations,
    write_validations,
)

if TYPE_CHECKING:
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.position import Position
    from burnish.train.loop.state import TrainingState

__all__ = ["MidEpochValidation"]

log = logging.getLogger("burnish.train")


class MidEpochValidation(Component):
    """When a validation runs inside an epoch, and the record of where each one ran.

    Args:
        every: validate every this many optimizer steps; None: at epoch ends only.
        directory: where `validations.json` is written (the valid split's file logs, rank 0);
            None: nowhere.
    """

    def __init__(self, every: int | None, directory: Path | None = None) -> None:
        self.every = every
        self.directory = directory if every is not None else None
        self.points: list[ValidationPoint] = []
        self.unfinished: int | None = None  # the validation running, or stopped mid-way
        self.state: TrainingState | None = None
        self._isolated: contextlib.ExitStack | None = None

    # -- the loop's component --------------------------------------------------------------

    def bind(self, run: LoopView) -> None:
        self.state = run.state

    def fit_start(self, resumed: bool) -> None:
        self.restore(self._state().validations)

    def validation_due(self, iteration: int, last_iteration: bool) -> bool:
        return self.due(self._state(), iteration, last_iteration)

    def checkpoint_point(self, epoch_end: bool) -> CheckpointId | None:
        return self.point_after(self._state(), epoch_end)

    def validation_start(self, epoch_end: bool) -> None:
        """A validation inside the epoch runs isolated (`isolated`) until it ends."""
        if not epoch_end:
            self._isolated = contextlib.ExitStack()
            self._isolated.enter_context(self.isolated(self._state()))

    def validation_end(self, epoch_end: bool) -> None:
        self.record(self._state(), epoch_end)
        self._leave()

    def validation_interrupted(self) -> None:
        self._leave()

    def _leave(self) -> None:
        if self._isolated is not None:
            isolated, self._isolated = self._isolated, None
            isolated.close()

    def _state(self) -> TrainingState:
        assert self.state is not None, "MidEpochValidation.bind(run) comes before the run starts"
        return self.state

    # -- its rules -------------------------------------------------------------------------

    def due(self, state: TrainingState, iteration: int, last_iteration: bool) -> bool:
        """Whether a validation runs after `iteration` (already trained) of the epoch.

        Args:
            state: the run's state after the iteration.
            iteration: the iteration of the epoch just trained.
            last_iteration: whether the epoch's own validation follows (the epoch's last
                iteration, or the step budget spent).
        """
        if self.every is None or iteration == 0 or last_iteration:
            return False
        steps = state.optimizer_steps
        return (
            state.accumulation.stepped and steps % self.every == 0 and steps != state.validated_at
        )

    def point_after(self, state: TrainingState, epoch_end: bool) -> CheckpointId | None:
        """The checkpoint the strategy's decision on the validation just done writes:
        `epoch-N-iteration-K` inside an epoch, `epoch-N` at its end; None without
        `valid_every` (validation N is epoch N's: its checkpoint is `epoch-N`)."""
        if self.every is None:
            return None
        position = state.position
        if epoch_end:
            return CheckpointId(position.epoch)
        return CheckpointId(position.epoch, position.iteration)

    @contextlib.contextmanager
    def isolated(self, state: TrainingState) -> Iterator[None]:
        """Around a validation inside an epoch: the random generators restored and the model
        back in training mode afterwards. Until the validation is done (`state.validations`
        counts it), `unfinished` is its number: a run stopped in it says so (`where`)."""
        number = state.validations + 1
        self.unfinished = number
        with preserved_rng():
            try:
                yield
            finally:
                state.model.train()
                self.unfinished = None if state.validations >= number else number

    def where(self, position: Position) -> str:
        """Where a run stopped, in words: in a validation inside the epoch, or at `position`."""
        if self.unfinished is None:
            return f"epoch {position.epoch}, iteration {position.iteration} ({position.phase})"
        return (
            f"epoch {position.epoch}, validation {self.unfinished} inside the epoch "
            f"(after train iteration {position.iteration})"
        )

    def restore(self, validations: int) -> None:
        """A run (re)starts with `validations` done: forget the entries written after them."""
        if self.directory is None:
            return
        try:
            found = read_validations(self.directory)
        except ValueError as error:
            log.warning("%s It is written anew.", error)
            found = None
        self.points = (found or [])[:validations]
        if found is None or len(found) != len(self.points):
            write_validations(self.directory, self.points)

    def record(self, state: TrainingState, epoch_end: bool) -> None:
        """Validation `state.validations` (just done) was taken where `state` stands."""
        if self.directory is None:
            return
        position = state.position
        point = ValidationPoint(
            state.validations, position.epoch, position.iteration, state.optimizer_steps, epoch_end
        )
        self.points = [p for p in self.points if p.validation < point.validation] + [point]
        write_validations(self.directory, self.points)

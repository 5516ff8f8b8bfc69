"""`Components`: the loop's components as one, the only one the loop talks to.

Events go to every component in registration order (components/registry.py; `fit_end` in
reverse, as a teardown); decisions
combine: any `should_stop`/`halted`/`spent`/`validation_due` wins, every `may_checkpoint` must
agree, `epochs`, `batches` and `guard_step` pass through each in order, and the first
`checkpoint_point`/`valid_model` given is taken. Records are keyed by each component's `key`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from burnish.train.components.component import Component, OptimizerStep

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from burnish.optim import GradScaler
    from burnish.train.checkpoint.file import CheckpointId
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.result import TrainingResult
    from burnish.train.metric.base import MetricMetadata
    from burnish.train.split import Split

__all__ = ["Components"]


class Components:
    """The run's components, in the order they are told of each event."""

    def __init__(self, components: Sequence[Component]) -> None:
        self.parts = list(components)
        # The per-iteration calls go only to the components that override them: a loop with
        # nine components pays for the two or three that listen, not for nine no-ops.
        self._stepped = _overriding(self.parts, "after_optimizer_step")
        self._iteration_end = _overriding(self.parts, "iteration_end")
        self._halted = _overriding(self.parts, "halted")
        self._spent = _overriding(self.parts, "spent")
        self._validation_due = _overriding(self.parts, "validation_due")

    def __iter__(self) -> Iterator[Component]:
        return iter(self.parts)

    # -- events ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for part in self.parts:
                stack.enter_context(part.held())
            yield

    def bind(self, run: LoopView) -> None:
        for part in self.parts:
            part.bind(run)

    def fit_start(self, resumed: bool) -> None:
        for part in self.parts:
            part.fit_start(resumed)

    def after_optimizer_step(self, model: nn.Module, scaler: GradScaler | None) -> None:
        for stepped in self._stepped:
            stepped(model, scaler)

    def iteration_end(
        self, split: Split, metadata: MetricMetadata, values: Mapping[str, float] | None
    ) -> None:
        for iteration_end in self._iteration_end:
            iteration_end(split, metadata, values)

    def validation_start(self, epoch_end: bool) -> None:
        for part in self.parts:
            part.validation_start(epoch_end)

    def split_end(self, split: Split, epoch: int, values: MutableMapping[str, float]) -> None:
        for part in self.parts:
            part.split_end(split, epoch, values)

    def validation_end(self, epoch_end: bool) -> None:
        for part in self.parts:
            part.validation_end(epoch_end)

    def validation_interrupted(self) -> None:
        for part in self.parts:
            part.validation_interrupted()

    def before_checkpoint(self) -> None:
        for part in self.parts:
            part.before_checkpoint()

    def checkpoint(self, point: CheckpointId, path: Path, step: int | None = None) -> None:
        for part in self.parts:
            part.checkpoint(point, path, step)

    def result(self, result: TrainingResult) -> None:
        for part in self.parts:
            part.result(result)

    def fit_end(self, result: TrainingResult) -> None:
        for part in reversed(self.parts):  # a teardown: the first set up, the last torn down
            part.fit_end(result)

    # -- decisions -------------------------------------------------------------------------

    def epochs(self, planned: int, batches_per_epoch: int) -> int:
        for part in self.parts:
            planned = part.epochs(planned, batches_per_epoch)
        return planned

    def batches(self, batches: Iterator[Any]) -> Iterator[Any]:
        for part in self.parts:
            batches = part.batches(batches)
        return batches

    def spent(self) -> bool:
        return any(spent() for spent in self._spent)

    def validation_due(self, iteration: int, last_iteration: bool) -> bool:
        return any(due(iteration, last_iteration) for due in self._validation_due)

    def checkpoint_point(self, epoch_end: bool) -> CheckpointId | None:
        return next(
            (p for part in self.parts if (p := part.checkpoint_point(epoch_end)) is not None),
            None,
        )

    def should_stop(self, validation: int) -> bool:
        return any([part.should_stop(validation) for part in self.parts])  # every one asked

    def halted(self) -> bool:
        return any(halted() for halted in self._halted)

    def may_checkpoint(self) -> bool:
        return all([part.may_checkpoint() for part in self.parts])  # every one asked

    def valid_model(self, model: nn.Module) -> Any:
        return next((v for part in self.parts if (v := part.valid_model(model)) is not None), None)

    def guard_step(self, step: OptimizerStep) -> OptimizerStep:
        for part in self.parts:
            step = part.guard_step(step)
        return step

    # -- records ---------------------------------------------------------------------------

    def to_record(self) -> dict[str, Any]:
        """The records that go in the `learner` record, by key."""
        return {p.key: p.to_record() for p in self.parts if p.key is not None and not p.file}

    def to_files(self) -> dict[str, Any]:
        """The records that are checkpoint files of their own, by key."""
        return {p.key: p.to_record() for p in self.parts if p.key is not None and p.file}

    def load_record(self, learner: Mapping[str, Any], changed: list[str]) -> None:
        for part in self.parts:
            if part.key is not None and not part.file:
                part.load_record(learner.get(part.key), changed)

    def load_files(self, records: Mapping[str, Any], changed: list[str]) -> None:
        for part in self.parts:
            if part.key is not None and part.file:
                part.load_record(records.get(part.key), changed)


def _overriding(parts: Sequence[Component], name: str) -> list[Any]:
    """The bound `name` methods of the components that override `Component`'s default."""
    default = getattr(Component, name)
    return [getattr(part, name) for part in parts if getattr(type(part), name) is not default]

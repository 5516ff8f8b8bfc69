"""The learning-rate scheduler interface (Burn: `LrScheduler`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, cast

from burnish.errors import RecordError

if TYPE_CHECKING:
    from burnish.lr_scheduler.module_lr_scheduler import ModuleLrScheduler
    from burnish.optim.param_group import ParamGroup

__all__ = ["LrScheduler", "check_record"]


class LrScheduler(ABC):
    """Yields the learning rate of each iteration: call `step()` once per optimizer step.

    The first `step()` returns the first learning rate of the schedule (e.g. `initial_lr`),
    as in Burn. State is a small record of Python scalars (`to_record` / `load_record`).
    """

    # The scheduler of parameter groups, which `with_group` wraps this one in:
    # `ModuleLrScheduler`, a subclass, names itself (`class ModuleLrScheduler(..., LrScheduler,
    # groups=True)`), so that this module never imports its own subclass.
    _module_scheduler_class: ClassVar[type[ModuleLrScheduler]]

    def __init_subclass__(cls, groups: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if groups:
            LrScheduler._module_scheduler_class = cast("type[ModuleLrScheduler]", cls)

    @abstractmethod
    def step(self) -> float:
        """Advance one iteration and return its learning rate."""

    @abstractmethod
    def to_record(self) -> dict[str, Any]:
        """The scheduler's position, as a record of Python scalars."""

    @abstractmethod
    def load_record(self, record: dict[str, Any]) -> LrScheduler:
        """Resume from a record of `to_record`; returns self."""

    def with_group(self, group: ParamGroup, scheduler: LrScheduler | float | Any) -> Any:
        """A `ModuleLrScheduler` with this scheduler as the base and `scheduler` for `group`.

        Burn main's scheduler configs `init()` into a `ModuleLrScheduler`, so Burn writes
        `config.init()?.with_group(group, other)`; here `init()` gives the scheduler itself,
        and this wraps it the same way.

        Args:
            group: the parameters (`ParamGroup.from_predicate("conv")`, ...).
            scheduler: their schedule: a scheduler, a scheduler config or a float.

        Returns:
            A new `ModuleLrScheduler` (the learner and `ModuleOptimizer` take it).
        """
        return self._module_scheduler_class(self).with_group(group, scheduler)


def check_record(record: Any, scheduler: LrScheduler, keys: tuple[str, ...]) -> dict[str, Any]:
    """Validate a scheduler record and return it.

    Raises:
        RecordError: if it is not a dict holding `keys`, or names another scheduler.
    """
    name = type(scheduler).__name__
    if not isinstance(record, dict) or any(key not in record for key in keys):
        raise RecordError(
            f"Expected a {name} record with keys {list(keys)} (from {name}.to_record()). "
            f"Received: {record!r}."
        )
    saved = record.get("scheduler", name)
    if saved != name:
        raise RecordError(
            f"This record was saved by {saved}; it cannot be loaded into {name}. Load it with "
            "the scheduler that saved it."
        )
    return record

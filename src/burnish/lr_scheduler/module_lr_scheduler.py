"""A learning rate per parameter group (Burn main: `ModuleLrScheduler`, `ModuleLearningRate`).

scheduler = ModuleLrScheduler(CosineAnnealingLrSchedulerConfig(1e-3, 1000)).with_group(
    ParamGroup.from_predicate("head"), CosineAnnealingLrSchedulerConfig(1e-2, 1000))
lr = scheduler.step()                # a ModuleLearningRate: float(lr) is the base group's
model = module_optim.step(lr, model, grads)   # each parameter at its group's rate
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnish.errors import RecordError
from burnish.lr_scheduler.base import LrScheduler, check_record
from burnish.lr_scheduler.constant import as_scheduler
from burnish.optim.module_learning_rate import ModuleLearningRate
from burnish.optim.param_group import ParamGroup
from burnish.value_builder import ValueBuilder

__all__ = ["ModuleLearningRate", "ModuleLrScheduler", "lr_from_record", "lr_to_record"]


class ModuleLrScheduler(ValueBuilder, LrScheduler, groups=True):
    """One scheduler for every parameter, others for groups of them (`with_group`).

    `step()` steps every scheduler once and returns a `ModuleLearningRate`. The learner
    accepts it wherever a scheduler goes, with any optimizer: each parameter steps at its
    group's rate (a plain optimizer from `init()` applies them as Burn's `ModuleOptimizer`).

    Args:
        scheduler: the base scheduler (a scheduler, a scheduler config, or a float).

    Example:
        >>> from burnish.lr_scheduler import LinearLrSchedulerConfig, ModuleLrScheduler
        >>> from burnish.optim import ParamGroup
        >>> scheduler = ModuleLrScheduler(1e-3).with_group(
        ...     ParamGroup.from_predicate("head"), LinearLrSchedulerConfig(0.5, 0.25, 10))
        >>> lr = scheduler.step()
        >>> float(lr), lr.lr_from_param("head.weight"), lr.lr_from_param("body.weight")
        (0.001, 0.5, 0.001)
    """

    _copies_state = True  # `with_group` copies the schedulers, their steps included

    def __init__(self, scheduler: LrScheduler | float | Any) -> None:
        self._schedulers = [as_scheduler(scheduler)]
        self._groups: tuple[ParamGroup, ...] = (ParamGroup.all(),)

    def with_group(
        self, group: ParamGroup, scheduler: LrScheduler | float | Any
    ) -> ModuleLrScheduler:
        """Schedule the rate of the parameters in `group` with `scheduler`: a new scheduler
        (this one stays as it was, and the two step apart).

        Raises:
            TypeError: if `group` is not a ParamGroup.
        """
        if not isinstance(group, ParamGroup):
            raise TypeError(
                "`group` must be a ParamGroup (ParamGroup.from_path / from_predicate / "
                f"from_regex). Received: {type(group).__name__}."
            )
        new = self._replace(_groups=(*self._groups, group))
        new._schedulers.append(as_scheduler(scheduler))
        return new

    @property
    def groups(self) -> tuple[ParamGroup, ...]:
        """The groups, the base `ParamGroup.all()` first."""
        return self._groups

    def step(self) -> ModuleLearningRate:
        """Step every group's scheduler; the rates of this iteration."""
        return ModuleLearningRate([s.step() for s in self._schedulers], self._groups)

    def learning_rate(self, lrs: Sequence[float]) -> ModuleLearningRate:
        """The `ModuleLearningRate` of these groups with rates `lrs` (a resumed step's)."""
        return ModuleLearningRate(lrs, self._groups)

    def to_record(self) -> dict[str, Any]:
        """Each group's scheduler record, in order."""
        return {
            "scheduler": "ModuleLrScheduler",
            "groups": [scheduler.to_record() for scheduler in self._schedulers],
        }

    def load_record(self, record: dict[str, Any]) -> ModuleLrScheduler:
        """Resume every group's scheduler.

        Raises:
            RecordError: if the record is not a ModuleLrScheduler's with as many groups.
        """
        groups = check_record(record, self, ("groups",))["groups"]
        if len(groups) != len(self._schedulers):
            raise RecordError(
                f"This ModuleLrScheduler record holds {len(groups)} schedulers (the base and "
                f"{len(groups) - 1} groups); this scheduler has {len(self._schedulers)}. "
                "Build the scheduler with the same groups as the run that saved it."
            )
        for scheduler, sub in zip(self._schedulers, groups):
            scheduler.load_record(sub)
        return self

    def __repr__(self) -> str:
        pairs = ", ".join(f"{g}: {s!r}" for g, s in zip(self._groups, self._schedulers))
        return f"ModuleLrScheduler({pairs})"


def lr_to_record(lr: float | None) -> Any:
    """A step's learning rate as a record: a float, or `{"lrs": [...]}` per group."""
    if isinstance(lr, ModuleLearningRate):
        return {"lrs": list(lr.lrs)}
    return lr


def lr_from_record(record: Any, scheduler: LrScheduler) -> float | None:
    """The learning rate `lr_to_record` saved, with `scheduler`'s groups if it has some."""
    if isinstance(record, dict):
        lrs = record["lrs"]
        if isinstance(scheduler, ModuleLrScheduler) and len(lrs) == len(scheduler.groups):
            return scheduler.learning_rate(lrs)
        return float(lrs[0])
    return record

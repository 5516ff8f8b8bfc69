"""The config of a `ModuleLrScheduler` (Burn main: `ModuleLrSchedulerConfig`)."""

from __future__ import annotations

from typing import Any

from burnish.lr_scheduler.children import build_children
from burnish.lr_scheduler.composite_config import LrSchedulerConfigType
from burnish.lr_scheduler.module_lr_scheduler import ModuleLrScheduler
from burnish.optim.param_group import ParamGroup

__all__ = ["ModuleLrSchedulerConfig"]


class ModuleLrSchedulerConfig:
    """A base schedule for every parameter and one per group of them; `init()` builds them.

    Burn's `ModuleLrSchedulerConfig::new(base).with_group(group, scheduler).init()`: each
    schedule is a float (a constant learning rate) or a scheduler config (Burn's
    `LrSchedulerConfig`, which `.into()` makes of either). A parameter takes the schedule of
    the last group added that matches its path, else the base's. Unlike the other scheduler
    configs it has no `save`/`load`: a `ParamGroup` is not saved as JSON in burnish.

    Args:
        base: the schedule of every parameter no group matches.
        scheduler_groups: `(group, schedule)` pairs (`with_group` appends one).

    Example:
        >>> from burnish.optim import ParamGroup
        >>> scheduler = (ModuleLrSchedulerConfig(1e-2)
        ...     .with_group(ParamGroup.from_predicate("frozen"), 0.0)
        ...     .init())
        >>> lr = scheduler.step()
        >>> lr.base(), lr.lr_from_param("frozen.weight")
        (0.01, 0.0)
    """

    def __init__(
        self,
        base: LrSchedulerConfigType,
        scheduler_groups: list[tuple[ParamGroup, LrSchedulerConfigType]] | None = None,
    ) -> None:
        self.base = base
        self.scheduler_groups = list(scheduler_groups or [])

    def with_group(
        self, group: ParamGroup, scheduler: LrSchedulerConfigType
    ) -> ModuleLrSchedulerConfig:
        """A copy with `scheduler` for the parameters of `group` appended.

        Raises:
            TypeError: if `group` is not a ParamGroup.
        """
        if not isinstance(group, ParamGroup):
            raise TypeError(
                "`group` must be a ParamGroup (ParamGroup.from_path / from_predicate / "
                f"from_regex). Received: {group!r} ({type(group).__name__})."
            )
        return ModuleLrSchedulerConfig(self.base, [*self.scheduler_groups, (group, scheduler)])

    def init(self) -> ModuleLrScheduler:
        """Build the base's and every group's scheduler.

        Raises:
            ConfigError: if a schedule's config is invalid (Burn returns it as an `Err`).
            TypeError: if a schedule is neither a float nor a scheduler config.
        """
        base, *groups = build_children([self.base, *(s for _, s in self.scheduler_groups)])
        scheduler = ModuleLrScheduler(base)
        for (group, _), built in zip(self.scheduler_groups, groups):
            scheduler = scheduler.with_group(group, built)
        return scheduler

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, ModuleLrSchedulerConfig):
            return NotImplemented
        return (self.base, self.scheduler_groups) == (other.base, other.scheduler_groups)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        groups = "".join(f".with_group({g!r}, {s!r})" for g, s in self.scheduler_groups)
        return f"ModuleLrSchedulerConfig({self.base!r}){groups}"

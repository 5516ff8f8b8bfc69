"""The learning rate of each parameter group for one step (Burn main: `ModuleLearningRate`).

`ModuleLrScheduler.step()` (burnish.lr_scheduler) makes one; `ModuleOptimizer.step` reads a
rate per group from it. It lives here, beside `ParamGroup`, because both sides need it: the
schedulers import the optimizers' layer, never the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from burnish.optim.param_group import ParamGroup

__all__ = ["ModuleLearningRate"]


class ModuleLearningRate(float):
    """The learning rate of each parameter group for one step.

    It is a float equal to the base rate (the first group's, which matches every parameter:
    Burn's `ModuleLearningRate::base()`), so whatever reads one rate (the `LearningRate`
    metric, the trackers) reads the base rate; `ModuleOptimizer.step` reads each group's.
    A parameter takes the rate of the last group added that matches its path (Burn's rule).

    Attributes:
        lrs: one rate per group, the base group's first.
        groups: the groups, the first `ParamGroup.all()`.
    """

    lrs: tuple[float, ...]
    groups: tuple[ParamGroup, ...]

    def __new__(cls, lrs: Sequence[float], groups: Sequence[ParamGroup]) -> ModuleLearningRate:
        lrs = tuple(map(float, lrs))
        if not lrs or len(lrs) != len(groups):
            raise ValueError(
                f"A ModuleLearningRate needs one rate per group. Received: {len(lrs)} rates "
                f"for {len(groups)} groups."
            )
        value = super().__new__(cls, lrs[0])
        value.lrs, value.groups = lrs, tuple(groups)
        return value

    def base(self) -> float:
        """The rate of the base group (every parameter no other group matches)."""
        return self.lrs[0]

    def lr_from_param(self, path: str) -> float:
        """The rate of the parameter at `path`: the last matching group's."""
        return self.lrs[self.group_index(path)]

    def group_index(self, path: str) -> int:
        """The index of the last group matching `path` (0, the base, if none other does)."""
        groups = self.groups
        return next((i for i in range(len(groups) - 1, 0, -1) if groups[i].matches(path)), 0)

    def __reduce__(self) -> tuple[Any, ...]:
        return (ModuleLearningRate, (self.lrs, self.groups))

    def __repr__(self) -> str:
        pairs = ", ".join(f"{group}: {lr!r}" for group, lr in zip(self.groups, self.lrs))
        return f"ModuleLearningRate({pairs})"

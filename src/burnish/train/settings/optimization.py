"""`OptimizationOptions`: how the optimizer steps are made from the iterations."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from burnish.train.loop.accumulation import LR_STEPS
from burnish.train.settings.fields import OptionGroup, positive

if TYPE_CHECKING:
    from burnish.train.components.ema import EmaSettings
    from burnish.train.components.non_finite import NonFiniteMode
    from burnish.train.loop.accumulation import LrStep

__all__ = ["OptimizationOptions"]


@dataclasses.dataclass(frozen=True)
class OptimizationOptions(OptionGroup):
    """How the optimizer steps are made from the iterations.

    Attributes:
        grads_accumulation: iterations per optimizer step; None: every iteration.
        lr_step: when the scheduler advances: each `"iteration"` (Burn's learner) or each
            `"optimizer_step"` (once per group of accumulated iterations).
        on_non_finite: what a non-finite loss or gradient does: `"continue"`, `"skip"` or
            `"stop"` (see non_finite.py).
        ema: the exponential moving average of the weights to keep, None: none.
    """

    grads_accumulation: int | None = positive("grads_accumulation")
    lr_step: LrStep = "iteration"
    on_non_finite: NonFiniteMode = "continue"
    ema: EmaSettings | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.lr_step not in LR_STEPS:
            raise ValueError(
                "`lr_step` must be 'iteration' (the scheduler advances every batch, as Burn's "
                "learner) or 'optimizer_step' (once per optimizer step). Received: "
                f"lr_step={self.lr_step!r}."
            )

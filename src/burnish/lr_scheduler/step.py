"""Step decay (Burn: `StepLrSchedulerConfig`)."""

from __future__ import annotations

import warnings
from typing import Any

from burnish.config import config
from burnish.lr_scheduler._validate import check_positive_int
from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["StepLrScheduler", "StepLrSchedulerConfig"]


@config
class StepLrSchedulerConfig:
    """Multiplies the learning rate by `gamma` every `step_size` steps.

    At step `i` (0-based): `lr_i = initial_lr * gamma^(i // step_size)`; the first step
    returns `initial_lr`. Equals `torch.optim.lr_scheduler.StepLR(step_size, gamma)`.
    As in Burn, a non-positive `initial_lr` or a `gamma` outside (0, 1) only warns.

    Args:
        initial_lr: first learning rate.
        step_size: steps between two decays, >= 1.
        gamma: decay factor.
    """

    initial_lr: float
    step_size: int
    gamma: float = 0.1

    def init(self) -> StepLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: if `step_size` is < 1.
        """
        check_positive_int("step_size", self.step_size, "Step size")
        if self.initial_lr <= 0.0:
            warnings.warn(
                f"Initial learning rate {self.initial_lr} is not positive. Ignore this warning "
                "if it is intended.",
                stacklevel=2,
            )
        if not 0.0 < self.gamma < 1.0:
            warnings.warn(
                f"Gamma {self.gamma} is outside (0, 1). Ignore this warning if it is intended.",
                stacklevel=2,
            )
        return StepLrScheduler(self.initial_lr, self.step_size, self.gamma)

    def build(self) -> StepLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class StepLrScheduler(LrScheduler):
    """See `StepLrSchedulerConfig`."""

    def __init__(self, initial_lr: float, step_size: int, gamma: float) -> None:
        self.initial_lr = initial_lr
        self.step_size = step_size
        self.gamma = gamma
        self.iter_idx = -1

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self.iter_idx += 1
        return self.initial_lr * self.gamma ** (self.iter_idx // self.step_size)

    def to_record(self) -> dict[str, Any]:
        """`{"iter_idx": int}` (-1 before the first step), as Burn."""
        return {"scheduler": "StepLrScheduler", "iter_idx": self.iter_idx}

    def load_record(self, record: dict[str, Any]) -> StepLrScheduler:
        """Resume from `to_record`."""
        self.iter_idx = int(check_record(record, self, ("iter_idx",))["iter_idx"])
        return self

"""Exponential learning-rate decay (Burn: `ExponentialLrSchedulerConfig`)."""

from __future__ import annotations

from typing import Any

from burnish.config import config
from burnish.errors import ConfigError
from burnish.lr_scheduler._validate import check_initial_lr
from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["ExponentialLrScheduler", "ExponentialLrSchedulerConfig"]


@config
class ExponentialLrSchedulerConfig:
    """Multiplies the learning rate by `gamma` every step.

    At step `i` (0-based): `lr_i = initial_lr * gamma^i`; the first step returns
    `initial_lr`. Equals `torch.optim.lr_scheduler.ExponentialLR(gamma)`.

    Args:
        initial_lr: first learning rate, in (0, 1].
        gamma: decay factor, in (0, 1].
    """

    initial_lr: float
    gamma: float

    def init(self) -> ExponentialLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: if `initial_lr` or `gamma` is outside (0, 1].
        """
        check_initial_lr(self.initial_lr)
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(
                f"Gamma must be greater than 0 and at most 1. Received: gamma={self.gamma!r}."
            )
        return ExponentialLrScheduler(self.initial_lr, self.gamma)

    def build(self) -> ExponentialLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class ExponentialLrScheduler(LrScheduler):
    """See `ExponentialLrSchedulerConfig`."""

    def __init__(self, initial_lr: float, gamma: float) -> None:
        self.gamma = gamma
        # One step "before" the first, so the first step() returns initial_lr (Burn's trick).
        self.previous_lr = initial_lr / gamma

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self.previous_lr *= self.gamma
        return self.previous_lr

    def to_record(self) -> dict[str, Any]:
        """`{"previous_lr": float}`, as Burn."""
        return {"scheduler": "ExponentialLrScheduler", "previous_lr": self.previous_lr}

    def load_record(self, record: dict[str, Any]) -> ExponentialLrScheduler:
        """Resume from `to_record`."""
        record = check_record(record, self, ("previous_lr",))
        self.previous_lr = float(record["previous_lr"])
        return self

"""Cosine annealing (Burn: `CosineAnnealingLrSchedulerConfig`)."""

from __future__ import annotations

import math
from typing import Any

from burnish.config import config
from burnish.errors import ConfigError
from burnish.lr_scheduler._validate import check_initial_lr, check_positive_int
from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["CosineAnnealingLrScheduler", "CosineAnnealingLrSchedulerConfig"]


@config
class CosineAnnealingLrSchedulerConfig:
    """Follows a cosine from `initial_lr` down to `min_lr` over `num_iters` steps.

    At step `i` (0-based):
    `lr_i = min_lr + (initial_lr - min_lr) * (1 + cos(pi * i / num_iters)) / 2`,
    so the first step returns `initial_lr` and step `num_iters` returns `min_lr`. Past
    `num_iters` the curve continues (rising again) without a restart, as in current Burn
    (which removed 0.19's restart) and `torch.optim.lr_scheduler.CosineAnnealingLR`
    (Loshchilov & Hutter, 2017, "SGDR: Stochastic Gradient Descent with Warm Restarts").

    Args:
        initial_lr: first learning rate, in (0, 1].
        num_iters: steps to reach `min_lr`, >= 1.
        min_lr: lowest learning rate, in [0, initial_lr].
    """

    initial_lr: float
    num_iters: int
    min_lr: float = 0.0

    def init(self) -> CosineAnnealingLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: if a value is out of range (see the class docstring).
        """
        check_initial_lr(self.initial_lr)
        if not 0.0 <= self.min_lr <= self.initial_lr:
            raise ConfigError(
                "Minimum learning rate must be at least 0 and at most equal to the initial "
                f"learning rate. Received: min_lr={self.min_lr!r}, "
                f"initial_lr={self.initial_lr!r}."
            )
        check_positive_int("num_iters", self.num_iters, "Number of iterations")
        return CosineAnnealingLrScheduler(self.initial_lr, self.num_iters, self.min_lr)

    def build(self) -> CosineAnnealingLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class CosineAnnealingLrScheduler(LrScheduler):
    """See `CosineAnnealingLrSchedulerConfig`."""

    def __init__(self, initial_lr: float, num_iters: int, min_lr: float = 0.0) -> None:
        self.max_lr = initial_lr
        self.min_lr = min_lr
        self.num_iters = num_iters
        self.current_iter = -1

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self.current_iter += 1
        cosine = math.cos(math.pi * self.current_iter / self.num_iters)
        return self.min_lr + 0.5 * (self.max_lr - self.min_lr) * (1.0 + cosine)

    def to_record(self) -> dict[str, Any]:
        """`{"current_iter": int}` (-1 before the first step)."""
        return {"scheduler": "CosineAnnealingLrScheduler", "current_iter": self.current_iter}

    def load_record(self, record: dict[str, Any]) -> CosineAnnealingLrScheduler:
        """Resume from `to_record`."""
        record = check_record(record, self, ("current_iter",))
        self.current_iter = int(record["current_iter"])
        return self

"""Linear learning-rate schedule (Burn: `LinearLrSchedulerConfig`)."""

from __future__ import annotations

from typing import Any

from burnish.config import config
from burnish.errors import ConfigError
from burnish.lr_scheduler._validate import check_initial_lr, check_positive_int
from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["LinearLrScheduler", "LinearLrSchedulerConfig"]


@config
class LinearLrSchedulerConfig:
    """Goes linearly from `initial_lr` to `final_lr` in `num_iters` steps, then stays there.

    At step `i` (0-based): `lr_i = initial_lr + (final_lr - initial_lr) * min(i, N) / N`
    with `N = num_iters`; the first step returns `initial_lr`. Equals
    `torch.optim.lr_scheduler.LinearLR(start_factor=1, end_factor=final_lr / initial_lr,
    total_iters=N)`.

    Args:
        initial_lr: first learning rate, in (0, 1].
        final_lr: last learning rate, in [0, 1].
        num_iters: steps to go from one to the other, >= 1.
    """

    initial_lr: float
    final_lr: float
    num_iters: int

    def init(self) -> LinearLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: if a value is out of range (see the class docstring).
        """
        check_initial_lr(self.initial_lr)
        if not 0.0 <= self.final_lr <= 1.0:
            raise ConfigError(
                "Final learning rate must be at least 0 and at most 1. Received: "
                f"final_lr={self.final_lr!r}."
            )
        check_positive_int("num_iters", self.num_iters, "Number of iterations")
        return LinearLrScheduler(self.initial_lr, self.final_lr, self.num_iters)

    def build(self) -> LinearLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class LinearLrScheduler(LrScheduler):
    """See `LinearLrSchedulerConfig`."""

    def __init__(self, initial_lr: float, final_lr: float, num_iters: int) -> None:
        self.final_lr = final_lr
        self.step_size = (final_lr - initial_lr) / num_iters
        self.remaining_iters = num_iters + 1

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        if self.remaining_iters > 0:
            self.remaining_iters -= 1
        return self.final_lr - self.step_size * self.remaining_iters

    def to_record(self) -> dict[str, Any]:
        """`{"remaining_iters": int}`, as Burn."""
        return {"scheduler": "LinearLrScheduler", "remaining_iters": self.remaining_iters}

    def load_record(self, record: dict[str, Any]) -> LinearLrScheduler:
        """Resume from `to_record`."""
        self.remaining_iters = int(
            check_record(record, self, ("remaining_iters",))["remaining_iters"]
        )
        return self

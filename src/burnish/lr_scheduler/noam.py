"""The Transformer's warm-up schedule (Burn: `NoamLrSchedulerConfig`)."""

from __future__ import annotations

from typing import Any

from burnish.config import config
from burnish.lr_scheduler._validate import check_positive_int
from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["NoamLrScheduler", "NoamLrSchedulerConfig"]


@config
class NoamLrSchedulerConfig:
    """Linear warm-up then inverse-square-root decay (Vaswani et al., 2017).

    At step `t` (1-based: the first `step()` uses t = 1):
    `lr_t = factor * model_size^-0.5 * min(t^-0.5, t * warmup_steps^-1.5)`.
    The peak, at `t = warmup_steps`, is `factor / sqrt(model_size * warmup_steps)`.

    Args:
        factor: overall scale.
        warmup_steps: steps of linear warm-up, >= 1.
        model_size: the model dimension, >= 1.
    """

    factor: float
    warmup_steps: int = 4000
    model_size: int = 512

    def init(self) -> NoamLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: if `warmup_steps` or `model_size` is < 1.
        """
        check_positive_int("warmup_steps", self.warmup_steps, "Warm-up steps")
        check_positive_int("model_size", self.model_size, "Model size")
        return NoamLrScheduler(self.factor, self.warmup_steps, self.model_size)

    def build(self) -> NoamLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class NoamLrScheduler(LrScheduler):
    """See `NoamLrSchedulerConfig`."""

    def __init__(self, factor: float, warmup_steps: int, model_size: int) -> None:
        self.factor = factor
        self.warmup_steps = float(warmup_steps)
        self.model_size = float(model_size)
        self.current_step = 0

    def step(self) -> float:
        """Advance one iteration and return its learning rate."""
        self.current_step += 1
        t = float(self.current_step)
        return self.factor * self.model_size**-0.5 * min(t**-0.5, t * self.warmup_steps**-1.5)

    def to_record(self) -> dict[str, Any]:
        """`{"step": int}` (steps taken), as Burn."""
        return {"scheduler": "NoamLrScheduler", "step": self.current_step}

    def load_record(self, record: dict[str, Any]) -> NoamLrScheduler:
        """Resume from `to_record`."""
        self.current_step = int(check_record(record, self, ("step",))["step"])
        return self

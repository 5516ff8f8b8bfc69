"""A constant learning rate (Burn: `ConstantLr`)."""

from __future__ import annotations

from typing import Any

from burnish.lr_scheduler.base import LrScheduler, check_record

__all__ = ["ConstantLr", "as_scheduler"]


class ConstantLr(LrScheduler):
    """Returns `lr` at every step; a bare float is accepted wherever a scheduler is.

    Args:
        lr: the learning rate.
    """

    def __init__(self, lr: float) -> None:
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise TypeError(f"`lr` must be a float. Received: {lr!r} ({type(lr).__name__}).")
        self.lr = float(lr)

    def step(self) -> float:
        """Return `lr`."""
        return self.lr

    def to_record(self) -> dict[str, Any]:
        """Nothing to save but the kind."""
        return {"scheduler": "ConstantLr"}

    def load_record(self, record: dict[str, Any]) -> ConstantLr:
        """Check the record; a constant has no position."""
        check_record(record, self, ())
        return self

    def __repr__(self) -> str:
        return f"ConstantLr({self.lr})"


def as_scheduler(value: float | LrScheduler | Any) -> LrScheduler:
    """A scheduler from a float (constant learning rate), a scheduler, or a scheduler config.

    Raises:
        TypeError: for anything else.
    """
    if isinstance(value, LrScheduler):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ConstantLr(float(value))
    init = getattr(value, "init", None)
    if callable(init):
        scheduler = init()
        if isinstance(scheduler, LrScheduler):
            return scheduler
    raise TypeError(
        "Expected a learning rate: a float, an LrScheduler, or a scheduler config such as "
        f"CosineAnnealingLrSchedulerConfig. Received: {value!r} ({type(value).__name__})."
    )

"""Schedules run one after another (Burn: `SequentialLrSchedulerConfig`)."""

from __future__ import annotations

import bisect
from typing import Any

from burnish.config import config
from burnish.errors import ConfigError
from burnish.lr_scheduler.base import LrScheduler, check_record
from burnish.lr_scheduler.composed import (  # Composed...: LrSchedulerConfigType's forward ref
    ComposedLrSchedulerConfig,  # noqa: F401
    LrSchedulerConfigType,
    build_children,
    children_records,
    load_children,
)

__all__ = ["SequentialLrScheduler", "SequentialLrSchedulerConfig"]


@config
class SequentialLrSchedulerConfig:
    """Hands over from one schedule to the next at the given milestones.

    A milestone is a number of completed `step()` calls: with schedulers `[a, b]` and
    milestones `[100]`, steps 0..99 come from `a` and step 100 is `b`'s *first* step (each
    schedule starts fresh when it takes over, and is only stepped while active). `N`
    schedulers take exactly `N - 1` milestones, each >= 1 and strictly increasing.

    Example:
        >>> warmup = LinearLrSchedulerConfig(1e-5, 1e-2, 100)
        >>> decay = CosineAnnealingLrSchedulerConfig(1e-2, 900)
        >>> SequentialLrSchedulerConfig([warmup, decay], [100])
    """

    schedulers: list[LrSchedulerConfigType]
    milestones: list[int]

    def init(self) -> SequentialLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: on an empty list, a wrong number of milestones, or milestones that
                are not >= 1 and strictly increasing (and on any child's error).
        """
        if not self.schedulers:
            raise ConfigError("At least one scheduler is required. Received: schedulers=[].")
        if len(self.milestones) + 1 != len(self.schedulers):
            raise ConfigError(
                "The number of milestones must be one less than the number of schedulers. "
                f"Received: {len(self.milestones)} milestones for {len(self.schedulers)} "
                "schedulers."
            )
        previous = 0
        for milestone in self.milestones:
            if milestone <= previous:
                raise ConfigError(
                    "Milestones must be greater than zero and strictly increasing. Received: "
                    f"milestones={self.milestones}."
                )
            previous = milestone
        return SequentialLrScheduler(build_children(self.schedulers), list(self.milestones))

    def build(self) -> SequentialLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


class SequentialLrScheduler(LrScheduler):
    """See `SequentialLrSchedulerConfig`."""

    def __init__(self, schedulers: list[LrScheduler], milestones: list[int]) -> None:
        self.schedulers = schedulers
        self.milestones = milestones
        self.current_step = 0

    def step(self) -> float:
        """Step the active schedule and return its learning rate."""
        active = bisect.bisect_right(self.milestones, self.current_step)
        self.current_step += 1
        return self.schedulers[active].step()

    def to_record(self) -> dict[str, Any]:
        """`{"step": int, "schedulers": [child records]}`."""
        return {
            "scheduler": "SequentialLrScheduler",
            "step": self.current_step,
            "schedulers": children_records(self.schedulers),
        }

    def load_record(self, record: dict[str, Any]) -> SequentialLrScheduler:
        """Resume from `to_record`."""
        record = check_record(record, self, ("step", "schedulers"))
        self.current_step = int(record["step"])
        load_children(self.schedulers, record["schedulers"])
        return self

"""Schedules run one after another (Burn: `SequentialLrScheduler`); its config, which holds
other scheduler configs, is in `composite_config.py`."""

from __future__ import annotations

import bisect
from typing import Any

from burnish.lr_scheduler.base import LrScheduler, check_record
from burnish.lr_scheduler.children import children_records, load_children

__all__ = ["SequentialLrScheduler"]


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

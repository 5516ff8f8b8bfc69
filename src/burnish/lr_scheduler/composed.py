"""Several schedules combined into one (Burn: `ComposedLrScheduler`); its config, which holds
other scheduler configs, is in `composite_config.py`."""

from __future__ import annotations

import enum
from typing import Any

from burnish.lr_scheduler.base import LrScheduler, check_record
from burnish.lr_scheduler.children import children_records, load_children
from burnish.lr_scheduler.constant import ConstantLr
from burnish.value_builder import ValueBuilder

__all__ = ["ComposedLrScheduler", "SchedulerReduction"]


class SchedulerReduction(enum.Enum):
    """How `ComposedLrScheduler` combines the learning rates of its schedules."""

    Avg = "avg"
    Sum = "sum"
    Prod = "prod"


class ComposedLrScheduler(ValueBuilder, LrScheduler):
    """See `ComposedLrSchedulerConfig`."""

    _copies_state = True  # `with_custom_scheduler` copies the schedulers, their steps included

    def __init__(self, schedulers: list[LrScheduler], reduction: SchedulerReduction) -> None:
        self.schedulers = schedulers
        self.reduction = reduction

    def with_custom_scheduler(self, scheduler: LrScheduler | float) -> ComposedLrScheduler:
        """Add a scheduler of your own (an `LrScheduler`, or a float) to the schedules: a new
        scheduler (this one stays as it was). Its record joins the others' (`to_record`).

        Raises:
            TypeError: if `scheduler` is neither.
        """
        if not isinstance(scheduler, LrScheduler):
            if isinstance(scheduler, bool) or not isinstance(scheduler, (int, float)):
                raise TypeError(
                    "`with_custom_scheduler` takes an LrScheduler (a subclass with `step`, "
                    "`to_record` and `load_record`) or a float. Received: "
                    f"{scheduler!r} ({type(scheduler).__name__}). Add a config with "
                    "`ComposedLrSchedulerConfig.linear(..)` and the like instead."
                )
            scheduler = ConstantLr(float(scheduler))
        new = self._replace()
        new.schedulers.append(scheduler)
        return new

    def step(self) -> float:
        """Step every schedule and combine their learning rates."""
        rates = [scheduler.step() for scheduler in self.schedulers]
        if self.reduction is SchedulerReduction.Prod:
            result = 1.0
            for rate in rates:
                result *= rate
            return result
        if self.reduction is SchedulerReduction.Avg:
            return float(sum(rate / len(rates) for rate in rates))  # 0.0, not 0, when empty
        return float(sum(rates))

    def to_record(self) -> dict[str, Any]:
        """`{"schedulers": [child records]}`."""
        return {"scheduler": "ComposedLrScheduler", "schedulers": children_records(self.schedulers)}

    def load_record(self, record: dict[str, Any]) -> ComposedLrScheduler:
        """Resume from `to_record`."""
        record = check_record(record, self, ("schedulers",))
        load_children(self.schedulers, record["schedulers"])
        return self

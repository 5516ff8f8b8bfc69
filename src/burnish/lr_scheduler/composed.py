"""Several schedules combined into one (Burn: `ComposedLrSchedulerConfig`)."""

from __future__ import annotations

import enum
from typing import Any, Union

from burnish.config import config, is_config
from burnish.errors import RecordError
from burnish.lr_scheduler.base import LrScheduler, check_record
from burnish.lr_scheduler.constant import ConstantLr
from burnish.lr_scheduler.cosine import CosineAnnealingLrSchedulerConfig
from burnish.lr_scheduler.exponential import ExponentialLrSchedulerConfig
from burnish.lr_scheduler.linear import LinearLrSchedulerConfig
from burnish.lr_scheduler.noam import NoamLrSchedulerConfig
from burnish.lr_scheduler.step import StepLrSchedulerConfig
from burnish.value_builder import ValueBuilder

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "LrSchedulerConfigType",
    "SchedulerReduction",
    "build_children",
    "children_records",
    "load_children",
]

# A child schedule, the values of Burn's `LrSchedulerConfig` enum: a float (a constant
# learning rate) or a scheduler config. The two composite configs are forward references,
# resolved when a config is saved or loaded (SequentialLrSchedulerConfig is imported below).
LrSchedulerConfigType = Union[
    float,
    LinearLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
    "ComposedLrSchedulerConfig",
    "SequentialLrSchedulerConfig",
]


class SchedulerReduction(enum.Enum):
    """How `ComposedLrScheduler` combines the learning rates of its schedules."""

    Avg = "avg"
    Sum = "sum"
    Prod = "prod"


@config
class ComposedLrSchedulerConfig:
    """Steps every schedule each iteration and combines their learning rates.

    `lr_i = reduce(s.step() for s in schedulers)` with `reduction` Prod (default:
    the product), Sum, or Avg (the sum divided by the number of schedules). With no
    schedule: Prod gives 1.0, Sum and Avg 0.0 (floats), as Burn.

    Example:
        >>> config = (ComposedLrSchedulerConfig()
        ...     .linear(LinearLrSchedulerConfig(1e-3, 1e-2, 100))
        ...     .cosine(CosineAnnealingLrSchedulerConfig(1.0, 1000)))
    """

    schedulers: list[LrSchedulerConfigType] = []
    reduction: SchedulerReduction = SchedulerReduction.Prod

    def constant(self, lr: float) -> ComposedLrSchedulerConfig:
        """A copy with a constant learning rate appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, float(lr)], self.reduction)

    def linear(self, config: LinearLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a linear schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def cosine(self, config: CosineAnnealingLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a cosine schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def exponential(self, config: ExponentialLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with an exponential schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def noam(self, config: NoamLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a Noam schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def step(self, config: StepLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a step schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def composed(self, config: ComposedLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a composed schedule appended (its rates reduced by its own reduction)."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def init(self) -> ComposedLrScheduler:
        """Build the scheduler (and every child; their errors propagate).

        Burn main's `init()` wraps it in a `ModuleLrScheduler`; this is the scheduler itself
        (Burn's `build()`), which the learner takes as well: `.with_group(..)` wraps it.
        """
        return ComposedLrScheduler(build_children(self.schedulers), self.reduction)

    def build(self) -> ComposedLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


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


def build_children(configs: list[Any]) -> list[LrScheduler]:
    """Schedulers from child configs (a float is a constant learning rate).

    Raises:
        TypeError: for a child that is neither (a scheduler instance included: a config
            builds a fresh scheduler at each `init()`, and a scheduler cannot be saved in it).
    """
    return [_build_child(config) for config in configs]


def _build_child(config: Any) -> LrScheduler:
    if isinstance(config, ConstantLr):  # stateless: the same as its float
        return ConstantLr(config.lr)
    if isinstance(config, (int, float)) and not isinstance(config, bool):
        return ConstantLr(float(config))
    if is_config(config) and callable(getattr(config, "init", None)):
        scheduler = config.init()
        if isinstance(scheduler, LrScheduler):
            return scheduler
    raise TypeError(
        "A schedule in a scheduler config must be a float (a constant learning rate) or a "
        "scheduler config such as LinearLrSchedulerConfig (Burn's LrSchedulerConfig variants). "
        f"Received: {config!r} ({type(config).__name__}). Pass its config, or add a scheduler "
        "object to the built scheduler with `ComposedLrScheduler.with_custom_scheduler`."
    )


def children_records(schedulers: list[LrScheduler]) -> list[dict[str, Any]]:
    """The records of `schedulers`, in order."""
    return [scheduler.to_record() for scheduler in schedulers]


def load_children(schedulers: list[LrScheduler], records: Any) -> None:
    """Load `records` into `schedulers`, one each.

    Raises:
        RecordError: if the counts differ.
    """
    if not isinstance(records, list) or len(records) != len(schedulers):
        count = len(records) if isinstance(records, list) else type(records).__name__
        raise RecordError(
            f"Expected {len(schedulers)} child scheduler records. Received: {count}. Load a "
            "record saved with the same schedule configuration."
        )
    for scheduler, record in zip(schedulers, records):
        scheduler.load_record(record)


# Last: sequential.py imports this module's names (the package imports this module first).
from burnish.lr_scheduler.sequential import SequentialLrSchedulerConfig  # noqa: E402

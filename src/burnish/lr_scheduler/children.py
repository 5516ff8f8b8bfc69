"""The child schedules of the composite schedulers (composed and sequential): built from their
configs, saved and loaded in order."""

from __future__ import annotations

from typing import Any

from burnish.config import is_config
from burnish.errors import RecordError
from burnish.lr_scheduler.base import LrScheduler
from burnish.lr_scheduler.constant import ConstantLr

__all__ = ["build_children", "children_records", "load_children"]


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

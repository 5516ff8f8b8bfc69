"""Values logged by the run's components and listeners (`event.log(name, value)`), beside the
metrics of a split: each is written to the split's metric log as an entry of its own (one line,
count 1), and its epoch value (the mean of the epoch's logged values) joins the metrics' epoch
values: in the aggregates the summary reads, on the dashboard and in every tracker."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from burnish.train.logger.epoch_aggregates import EntryStats, MetricAggregate

__all__ = ["LoggedValues"]


class LoggedValues:
    """The values logged by name over one split's epoch (host floats; no device access kept).

    Args:
        metric_names: the split's metric names, which a logged value may not take.
    """

    def __init__(self, metric_names: Iterable[str]) -> None:
        self.metric_names = frozenset(metric_names)
        self.stats: dict[str, EntryStats] = {}
        self.seen: set[str] = set()  # every name logged in the run (the summary shows them)

    def add(self, name: str, value: float | torch.Tensor) -> float:
        """Count `value` under `name`; returns it as a host float.

        Raises:
            ValueError: if `name` is a metric's, or `value` is not one number.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"A logged value needs a name (a non-empty str), not {name!r}.")
        if name in self.metric_names:
            raise ValueError(
                f"{name!r} is already a metric of this split: log the value under another name."
            )
        number = _number(name, value)
        self.stats.setdefault(name, EntryStats()).add(number, 1)
        self.seen.add(name)
        return number

    def values(self) -> dict[str, float]:
        """Each name's epoch value: the mean of its values (NaN if all were NaN)."""
        return {name: stats.mean() for name, stats in self.stats.items()}

    def aggregates(self) -> dict[str, MetricAggregate]:
        return {name: stats.aggregate(stats.mean()) for name, stats in self.stats.items()}

    def clear(self) -> None:
        self.stats = {}

    def to_record(self) -> dict[str, Any]:
        stats = {name: stats.to_record() for name, stats in self.stats.items()}
        return {"epoch": stats, "seen": sorted(self.seen)}

    def load_record(self, record: Mapping[str, Any] | None) -> None:
        record = record or {}
        self.stats = {n: EntryStats.from_record(r) for n, r in record.get("epoch", {}).items()}
        self.seen = set(record.get("seen", ())) | set(self.stats)


def _number(name: str, value: Any) -> float:
    """`value` as a float: a Python number or a one-element tensor (read back: one sync)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"The value logged as {name!r} has {value.numel()} elements (shape "
                f"{tuple(value.shape)}): log one number, e.g. `tensor.mean()`."
            )
        return float(value.detach().reshape(()).item())
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(
            f"The value logged as {name!r} is a {type(value).__name__}: log a number (a float, "
            "an int or a one-element tensor)."
        )
    return float(value)

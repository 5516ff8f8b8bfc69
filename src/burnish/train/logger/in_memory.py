"""Metric logs kept in memory (Burn's `InMemoryMetricLogger`), for tests and debugging."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from burnish.train.logger.base import (
    LoggedEntry,
    LoggerPositions,
    MetricLogger,
    check_epoch,
    check_positions,
    positions_epoch,
    serialize_entry,
)
from burnish.train.metric.base import NumericEntry

__all__ = ["InMemoryMetricLogger"]


class InMemoryMetricLogger(MetricLogger):
    """Keep every logged line in a dict, keyed by metric name and epoch.

    Lines are stored serialised, exactly as `FileMetricLogger` writes them, so both loggers read
    back the same numbers.

    Example:
        >>> logger = InMemoryMetricLogger()
        >>> logger.log("Loss", 1, [NumericEntry(0.5, 32)])
        >>> logger.read_numeric("Loss", 1)[0].value
        0.5
    """

    def __init__(self) -> None:
        self.values: dict[str, dict[int, list[str]]] = {}
        self.splits: dict[str, InMemoryMetricLogger] = {}
        """The loggers of each split, when this one serves every split (`for_split`)."""
        self._epoch: int | None = None

    def for_split(self, split: str) -> InMemoryMetricLogger:
        """The logger of `split` (created on first use), kept in `splits`: Burn main's
        `with_metric_logger(InMemoryMetricLogger::new())` gives one logger every split, and
        `read_numeric(name, epoch, split)` reads each back."""
        key = str(getattr(split, "value", split))
        return self.splits.setdefault(key, InMemoryMetricLogger())

    def log(self, name: str, epoch: int, entries: Sequence[LoggedEntry]) -> None:
        """Append one serialised line per entry to metric `name` of `epoch`."""
        self._epoch = check_epoch(epoch)
        lines = self.values.setdefault(name, {}).setdefault(epoch, [])
        lines.extend(serialize_entry(entry) for entry in entries)

    @property
    def current_epoch(self) -> int | None:
        """The epoch being logged (after `end_epoch(n)`: n + 1); None before any log."""
        return self._epoch

    def end_epoch(self, epoch: int) -> None:
        """Mark `epoch` as done; the next epoch is `epoch + 1`."""
        self._epoch = check_epoch(epoch) + 1

    def read_numeric(self, name: str, epoch: int, split: str | None = None) -> list[NumericEntry]:
        """Every numeric entry of metric `name` in `epoch`; lines that do not parse are skipped.

        Args:
            name: the metric's name.
            epoch: the epoch, from 1.
            split: with a logger that served every split (`for_split`), the split to read
                (Burn's `read_numeric(name, epoch, split)`); None: this logger's own lines.
        """
        if split is not None:
            key = str(getattr(split, "value", split))
            child = self.splits.get(key)
            return [] if child is None else child.read_numeric(name, epoch)
        entries = []
        for line in self.values.get(name, {}).get(epoch, []):
            try:
                entries.append(NumericEntry.deserialize(line))
            except (ValueError, TypeError):
                continue
        return entries

    def positions(self, epoch: int | None = None) -> LoggerPositions:
        """`epoch` (None: the current one) and how many lines each of its metrics has."""
        epoch, _ = positions_epoch(self._epoch, epoch)
        lines = {name: len(log[epoch]) for name, log in self.values.items() if epoch in log}
        return {"epoch": epoch, "lines": lines}

    def truncate_to(self, positions: Mapping[str, Any]) -> None:
        """Drop the lines logged after `positions` was taken (and every later epoch).

        Raises:
            ValueError: if `positions` is malformed or lists more lines than were logged.
        """
        epoch, lines = check_positions(positions)
        self.revision += 1
        for name, count in lines.items():
            logged = len(self.values.get(name, {}).get(epoch, []))
            if count > logged:
                raise ValueError(
                    f"`positions` says metric {name!r} had {count} lines in epoch {epoch}, but "
                    f"only {logged} were logged. Pass the record `positions()` returned."
                )
        for name, epochs in self.values.items():
            for later in [e for e in epochs if e > epoch]:
                del epochs[later]
            if epoch in epochs:
                del epochs[epoch][lines.get(name, 0) :]
        self._drop_aggregates_from(epoch)
        self._epoch = epoch

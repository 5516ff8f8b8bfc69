"""The metric logger interface (Burn's `MetricLogger`) and helpers shared by its implementations."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Union, cast

import numpy as np

if TYPE_CHECKING:
    from burnish.train.logger.epoch_aggregates import MetricAggregate
    from burnish.train.metric.base import MetricEntry, NumericEntry

__all__ = ["DamagedLogError", "LoggedEntry", "LoggerPositions", "MetricLogger", "metric_file_stem"]

LoggedEntry = Union["NumericEntry", "MetricEntry", str]
"""What a logger takes: a `NumericEntry` (`"value,count"`), a text `MetricEntry` (its
`serialized` line) or a line already formatted."""

LoggerPositions = dict[str, Any]
"""`{"epoch": int, "lines": {metric_name: int}}`: a logger's committed lines, as a record."""

# Characters no common file system accepts in a file name, plus the path separators.
_UNSAFE = re.compile(r'[\x00-\x1f/\\:*?"<>|]')


def metric_file_stem(name: str) -> str:
    """The file name (without `.log`) Burn gives a metric: spaces become `_`.

    Characters that no common file system accepts (`/ \\ : * ? " < > |`, control characters) also
    become `_`, so every metric name maps to a file inside its epoch directory.

    Raises:
        ValueError: if `name` is empty or only dots.
    """
    if not isinstance(name, str) or not name.strip(" .") or name in {".", ".."}:
        raise ValueError(
            f"A metric name must be a non-empty string that is not only dots or spaces. "
            f"Received: name={name!r}. Give the metric a descriptive `name`."
        )
    return _UNSAFE.sub("_", name.replace(" ", "_"))


def serialize_entry(entry: LoggedEntry) -> str:
    """One log line: `serialize()` of a `NumericEntry`, `serialized` of a `MetricEntry`, a `str`
    (line breaks in a text become spaces: one entry is one line)."""
    if isinstance(entry, str):
        return _one_line(entry)
    serialized = getattr(entry, "serialized", None)  # a MetricEntry
    if isinstance(serialized, str):
        return _one_line(serialized)
    return cast("NumericEntry", entry).serialize()


def _one_line(text: str) -> str:
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def check_epoch(epoch: int) -> int:
    """Return `epoch` if it is an int >= 1, else raise a `ValueError` saying so."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise ValueError(f"`epoch` must be an int >= 1 (epochs count from 1). Received: {epoch!r}.")
    return epoch


def positions_epoch(current: int | None, epoch: int | None) -> tuple[int, bool]:
    """The epoch a `positions()` record is for, and whether it is the logger's current one."""
    if epoch is None:
        return (current or 1), current is not None
    check_epoch(epoch)
    if current is not None and epoch < current:
        raise ValueError(
            f"`epoch` must not be before the logger's current epoch {current}. "
            f"Received: epoch={epoch}. Take positions before logging a later epoch."
        )
    return epoch, epoch == current


def check_positions(positions: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """Validate a `positions()` record; return its epoch and its lines per metric."""
    if not isinstance(positions, Mapping) or set(positions) != {"epoch", "lines"}:
        raise ValueError(
            "`positions` must be the record returned by `positions()`: "
            f'{{"epoch": int, "lines": {{name: int}}}}. Received: {positions!r}.'
        )
    epoch = check_epoch(positions["epoch"])
    lines = dict(positions["lines"])
    for name, count in lines.items():
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(
                f"`positions['lines'][{name!r}]` must be an int >= 0. Received: {count!r}."
            )
    return epoch, lines


class DamagedLogError(ValueError):
    """A numeric metric log with a line that is not a numeric entry after numeric ones."""


class MetricLogger(ABC):
    """Where the learner writes metric values, one line per iteration (Burn's `MetricLogger`).

    One logger serves one split (train or valid). Entries arrive in batches (the learner reads
    metric values back from the device at the renderer's rate, not every iteration), so `log`
    takes a sequence. `positions()`/`truncate_to()` let a run that resumes mid-epoch continue its
    logs without duplicate or missing lines.
    """

    revision: int = 0
    """Incremented by `truncate_to`: lines already read may have changed."""

    @property
    def current_epoch(self) -> int | None:
        """The epoch being logged (after `end_epoch(n)`: n + 1); None if unknown.

        Earlier epochs are closed: their lines change only through `truncate_to`.
        """
        return None

    @abstractmethod
    def log(self, name: str, epoch: int, entries: Sequence[LoggedEntry]) -> None:
        """Append `entries` (one per iteration, oldest first) to metric `name` of `epoch`."""

    @abstractmethod
    def end_epoch(self, epoch: int) -> None:
        """Close `epoch`: commit its lines; the next `log` starts a new epoch."""

    @abstractmethod
    def read_numeric(self, name: str, epoch: int) -> list[NumericEntry]:
        """Every numeric entry of metric `name` in `epoch` (empty if none was logged)."""

    def read_numeric_chunks(self, name: str, epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The entries of `read_numeric(name, epoch)` as `(values, counts)` arrays (float64,
        int64), a block at a time: what readers of long logs use. `FileMetricLogger` streams
        its file in constant memory; the default reads every entry at once.
        """
        entries = self.read_numeric(name, epoch)
        if entries:
            values = np.array([float(entry.value) for entry in entries], dtype=np.float64)
            yield values, np.array([entry.count for entry in entries], dtype=np.int64)

    def read_final(self, name: str, epoch: int) -> float | None:
        """The epoch value the log of `name` ends `epoch` with (Burn main's `value,final`
        line); None if it has none. The default has none; `FileMetricLogger` reads its file."""
        return None

    def log_aggregates(self, epoch: int, aggregates: Mapping[str, MetricAggregate]) -> None:
        """Keep `epoch`'s aggregates: each numeric metric's epoch value and line statistics.

        The learner calls it once per split and epoch, right after `end_epoch(epoch)`. The
        default keeps them in memory; `FileMetricLogger` writes `epoch-N/aggregates.json`.
        """
        check_epoch(epoch)
        self._aggregates()[epoch] = dict(aggregates)

    def read_aggregates(self, epoch: int) -> dict[str, MetricAggregate] | None:
        """`epoch`'s aggregates by metric name; None if none were logged (an open epoch, or a
        run written before they existed: then its readers derive the values from the lines)."""
        return self._aggregates().get(epoch)

    def _aggregates(self) -> dict[int, dict[str, MetricAggregate]]:
        """The in-memory aggregates (created on first use: subclasses need not call __init__)."""
        found: dict[int, dict[str, MetricAggregate]] | None = self.__dict__.get("_epoch_aggregates")
        if found is None:
            found = self.__dict__["_epoch_aggregates"] = {}
        return found

    def _drop_aggregates_from(self, epoch: int) -> None:
        """Forget the in-memory aggregates of `epoch` and later ones (a truncation)."""
        store = self._aggregates()
        for stale in [e for e in store if e >= epoch]:
            del store[stale]

    def flush(self) -> None:  # noqa: B027 - optional hook; in-memory loggers have nothing to do
        """Commit buffered lines (a no-op for loggers that do not buffer)."""

    def close(self) -> None:
        """Flush and release resources (open files); the logger may be used again after."""
        self.flush()

    @abstractmethod
    def positions(self, epoch: int | None = None) -> LoggerPositions:
        """Commit buffered lines; return `epoch` and the lines each of its metrics has.

        Args:
            epoch: The epoch the learner is in; None for the logger's current epoch (the last
                logged, or the one after the last ended; 1 if neither happened). Pass it when
                the logger may not have seen the epoch yet (e.g. before validation starts).

        Raises:
            ValueError: if `epoch` is before an epoch this logger already wrote to.
        """

    def for_split(self, split: str) -> MetricLogger:
        """The logger of one split when this one logger serves every split (Burn main's
        `with_metric_logger(logger)`: a Burn `MetricLogger` is told the split of each entry).

        `InMemoryMetricLogger` keeps each split apart; `FileMetricLogger(artifact_dir)` writes
        `<artifact_dir>/<split>/epoch-N/` as Burn's `FileMetricLogger::new(artifact_dir)` does.

        Raises:
            TypeError: for a logger that cannot tell the splits apart (the default).
        """
        raise TypeError(
            f"{type(self).__name__} logs one split, so it cannot serve every split alone. "
            f"Received: with_metric_logger({type(self).__name__}(...)) for split {split!r}. "
            "Pass one logger per split, `with_metric_logger(train_logger, valid_logger)`, or "
            "implement `for_split(split)` returning the logger of that split."
        )

    @abstractmethod
    def truncate_to(self, positions: Mapping[str, Any]) -> None:
        """Drop every line logged after `positions` (a `positions()` record) was taken, and the
        aggregates of its epoch and later ones (`_drop_aggregates_from`)."""

"""Epoch-level queries over the metric logs (Burn's `EventStore` and `NumericMetricsAggregate`).

Checkpointing and early-stopping strategies ask the store questions such as "which epoch had the
lowest validation loss?". The store reads the answer from the split's metric loggers and caches
each epoch's value: the metric's own epoch value, which the learner wrote once at the epoch's end
(`MetricLogger.read_aggregates`); for epochs without one, the `value,final` line that ends the
epoch's log (runs written by Burn main, `MetricLogger.read_final`); else (Burn ≤ 0.21, older
burnish runs) the count-weighted mean of the epoch's log lines, as Burn computes it.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from burnish.train.logger.base import MetricLogger, metric_file_stem
from burnish.train.logger.epoch_aggregates import MetricAggregate
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.numeric_lines import mean_of_entries
from burnish.train.metric.base import NumericEntry
from burnish.train.split import TRAINING_SPLITS, ParsableEnum, Split

log = logging.getLogger("burnish.train")

__all__ = [
    "Aggregate",
    "Direction",
    "MetricFinder",
    "MetricStore",
    "Split",
    "aggregate_entries",
    "metric_name",
]


class Aggregate(ParsableEnum):
    """How an epoch is reduced to one value (Burn: `Aggregate`; Burn has only `Mean`).

    `MEAN` is the metric's epoch value as the learner reported it (its `value()` at the epoch's
    end, kept in the epoch's aggregates): for a metric that averages its batches, Burn's
    count-weighted mean `sum(value * count) / sum(count)` of the lines; for an epoch-wide
    metric (AUROC, perplexity, padded accuracy, ...), its own definition. Logs without
    aggregates give the count-weighted mean of their lines.
    """

    MEAN = "mean"


class Direction(ParsableEnum):
    """Which values are better (Burn: `Direction`)."""

    LOWEST = "lowest"
    HIGHEST = "highest"


class MetricFinder(Protocol):
    """What checkpointing and early-stopping strategies ask of the metric store."""

    def find_metric(
        self, name: str, epoch: int, aggregate: Aggregate, split: Split | str
    ) -> float | None:
        """The `aggregate` of metric `name` over `epoch` of `split`, None if nothing was logged."""

    def find_epoch(
        self, name: str, aggregate: Aggregate, direction: Direction, split: Split | str
    ) -> int | None:
        """The epoch with the best `aggregate` of `name` in `direction`; None if none has one."""


def metric_name(metric: Any) -> str:
    """The name of `metric`: a metric instance (its `name`) or the name itself.

    Raises:
        TypeError: if `metric` is neither.
    """
    name = metric if isinstance(metric, str) else getattr(metric, "name", None)
    if callable(name):  # a metric written Burn-style, with a `name()` method
        name = name()
    if not isinstance(name, str) or not name:
        raise TypeError(
            "`metric` must be a metric (with a `name`) or a metric name. "
            f"Received: {metric!r}. Pass e.g. `LossMetric()` or 'Loss'."
        )
    return name


def aggregate_entries(entries: Iterable[NumericEntry], aggregate: Aggregate) -> float | None:
    """Reduce an epoch's entries: the value of a final entry ending them (Burn main's
    `value,final`), else `sum(value * count) / sum(count)` (None if there are none).

    The mean is weighted by each batch's item count, so a short last batch counts for what it
    holds (Burn's `NumericMetricsAggregate::aggregate`).
    """
    Aggregate.parse(aggregate)
    total = 0.0
    count = 0
    entries = list(entries)
    if entries and entries[-1].final:  # Burn: "the last line is always the true epoch value"
        return float(entries[-1].value)
    for entry in entries:
        if entry.final:
            continue
        total += float(entry.value) * entry.count
        count += entry.count
    return total / count if count > 0 else None


def _read_aggregates(
    logger: MetricLogger, epoch: int, reported: set[str]
) -> dict[str, MetricAggregate] | None:
    """`logger`'s aggregates of `epoch`; a damaged file is reported (once: `reported` holds
    what was said) and read around (None)."""
    try:
        return logger.read_aggregates(epoch)
    except ValueError as error:
        if str(error) not in reported:
            reported.add(str(error))
            log.warning("%s The epoch values of epoch %d come from its log lines.", error, epoch)
        return None


def _find_aggregate(
    aggregates: Mapping[str, MetricAggregate] | None, name: str
) -> MetricAggregate | None:
    """`name`'s aggregate; also found by its file stem (`Iteration_Speed` for `Iteration Speed`),
    the name `LearnerSummary.from_dir` knows a metric by."""
    if not aggregates:
        return None
    if name in aggregates:
        return aggregates[name]
    stems = {_stem(key): value for key, value in aggregates.items()}
    return stems.get(_stem(name))


def _stem(name: str) -> str | None:
    try:
        return metric_file_stem(name)
    except ValueError:
        return None


def _better(value: float, best: float | None, direction: Direction) -> bool:
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value < best if direction is Direction.LOWEST else value > best


class MetricStore:
    """Answers epoch-level questions from the metric loggers of each split.

    An epoch's aggregate is cached once every logger of the split has moved past that epoch
    (its `current_epoch` is later), and forgotten when a logger is truncated (its `revision`
    changes). Loggers without `current_epoch` are read on every query. The store only reads:
    the learner writes to the loggers.

    Example:
        >>> store = MetricStore.from_dir("artifacts")
        >>> store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
        3

    Args:
        loggers: The metric loggers of each split (`{Split.TRAIN: logger, ...}`, a logger or a
            list of loggers per split).
    """

    def __init__(
        self,
        loggers: Mapping[Split, MetricLogger | Sequence[MetricLogger]]
        | Mapping[str, MetricLogger | Sequence[MetricLogger]]
        | None = None,
    ) -> None:
        self._loggers: dict[Split, list[MetricLogger]] = {split: [] for split in Split}
        self._cache: dict[tuple[Split, str, int, Aggregate], float] = {}
        self._revisions: dict[Split, tuple[int, ...]] = {}
        self._reported: set[str] = set()  # damaged aggregates files already warned about
        for split, value in (loggers or {}).items():
            for logger in [value] if isinstance(value, MetricLogger) else value:
                self.register_logger(split, logger)

    @classmethod
    def from_dir(cls, artifact_dir: str | os.PathLike) -> MetricStore:
        """A store over `<artifact_dir>/train` and `<artifact_dir>/valid` file logs."""
        artifact_dir = Path(artifact_dir)
        return cls({split: FileMetricLogger(artifact_dir / split) for split in TRAINING_SPLITS})

    def register_logger(self, split: Split | str, logger: MetricLogger) -> None:
        """Add `logger` to the loggers of `split` (Burn: `register_logger_train/valid`)."""
        if not isinstance(logger, MetricLogger):
            raise TypeError(
                f"`logger` must be a MetricLogger. Received: {type(logger).__name__}. "
                "Subclass burnish.train.logger.MetricLogger."
            )
        self._loggers[Split.parse(split)].append(logger)

    def loggers(self, split: Split | str) -> list[MetricLogger]:
        """The loggers registered for `split`."""
        return list(self._loggers[Split.parse(split)])

    def _invalidate(self, split: Split) -> None:
        """Forget the cached aggregates of `split`."""
        for key in [key for key in self._cache if key[0] is split]:
            del self._cache[key]

    # ---------------------------------------------------------------- queries
    def read_numeric(self, name: str, epoch: int, split: Split | str) -> list[NumericEntry]:
        """The entries of `name` in `epoch`, from the first logger of `split` that has some."""
        for logger in self._loggers[Split.parse(split)]:
            entries = logger.read_numeric(name, epoch)
            if entries:
                return entries
        return []

    def find_metric(
        self, name: str, epoch: int, aggregate: Aggregate, split: Split | str
    ) -> float | None:
        """The `aggregate` of metric `name` over `epoch` of `split`, None if nothing was logged.

        The epoch value comes from the first logger of `split` that has the epoch's aggregate
        for `name` or, failing that, lines of `name` in `epoch` (their count-weighted mean).

        Raises:
            ValueError: if `epoch` < 1 or `aggregate`/`split` is not one of the enum's members.
        """
        split = Split.parse(split)
        aggregate = Aggregate.parse(aggregate)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(f"`epoch` must be an int >= 1. Received: {epoch!r}.")
        self._drop_rewritten(split)
        key = (split, name, epoch, aggregate)
        if key in self._cache:
            return self._cache[key]
        value = self._epoch_value(name, epoch, split)
        if value is not None and self._closed(split, epoch):
            self._cache[key] = value
        return value

    def _epoch_value(self, name: str, epoch: int, split: Split) -> float | None:
        for logger in self._loggers[split]:
            current = getattr(logger, "current_epoch", None)
            if current is None or epoch < current:  # an open epoch has no aggregates yet
                found = _find_aggregate(_read_aggregates(logger, epoch, self._reported), name)
                if found is not None:
                    return found.value
                final = logger.read_final(name, epoch)  # Burn main's `value,final` line
                if final is not None:
                    return final
            mean, lines = mean_of_entries(logger.read_numeric_chunks(name, epoch))
            if lines:  # the first logger with entries answers
                return mean
        return None

    def _closed(self, split: Split, epoch: int) -> bool:
        """Whether every logger of `split` has moved past `epoch` (its logs can no longer grow)."""
        for logger in self._loggers[split]:
            current = getattr(logger, "current_epoch", None)
            if current is None or epoch >= current:
                return False
        return True

    def _drop_rewritten(self, split: Split) -> None:
        """Forget `split`'s cache when one of its loggers was truncated since it was filled."""
        revisions = tuple(getattr(logger, "revision", 0) for logger in self._loggers[split])
        if self._revisions.get(split, revisions) != revisions:
            self._invalidate(split)
        self._revisions[split] = revisions

    def find_epoch(
        self, name: str, aggregate: Aggregate, direction: Direction, split: Split | str
    ) -> int | None:
        """The epoch with the best `aggregate` of `name` (the earliest on ties).

        Epochs are read from 1 up to the first epoch without entries. NaN values are never best.
        Returns None if no epoch has a (non-NaN) value.
        """
        direction = Direction.parse(direction)
        best_epoch: int | None = None
        best: float | None = None
        epoch = 1
        while (value := self.find_metric(name, epoch, aggregate, split)) is not None:
            if _better(value, best, direction):
                best_epoch, best = epoch, value
            epoch += 1
        return best_epoch

    def values(self, name: str, aggregate: Aggregate, split: Split | str) -> list[float]:
        """The `aggregate` of `name` for epochs 1, 2, ... up to the first epoch without entries."""
        values: list[float] = []
        while (value := self.find_metric(name, len(values) + 1, aggregate, split)) is not None:
            values.append(value)
        return values

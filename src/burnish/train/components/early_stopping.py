"""Stop training when a metric stops improving (Burn's `EarlyStoppingStrategy`)."""

from __future__ import annotations

import dataclasses
import logging
import math
from abc import ABC, abstractmethod
from typing import Any

from burnish.errors import RecordError
from burnish.train.metric.store import Aggregate, Direction, MetricFinder, Split, metric_name
from burnish.value_builder import ValueBuilder

__all__ = ["EarlyStoppingStrategy", "MetricEarlyStoppingStrategy", "StoppingCondition"]

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class StoppingCondition:
    """When to stop (Burn: `StoppingCondition::NoImprovementSince { n_epochs }`).

    Build it with `StoppingCondition.no_improvement_since(n_epochs)`, or Burn's variant as
    written in Burn: `StoppingCondition.NoImprovementSince(n_epochs=1)`.

    Attributes:
        n_epochs: Stop once this many epochs have passed since the best one.
    """

    n_epochs: int

    def __post_init__(self) -> None:
        n = self.n_epochs
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(
                f"`n_epochs` must be an int >= 1. Received: n_epochs={n!r}. "
                "To never stop early, do not set an early-stopping strategy."
            )

    @classmethod
    def no_improvement_since(cls, n_epochs: int) -> StoppingCondition:
        """Stop when `epoch - best_epoch >= n_epochs`."""
        return cls(n_epochs)

    @classmethod
    def NoImprovementSince(cls, n_epochs: int) -> StoppingCondition:
        """Burn's variant, `StoppingCondition::NoImprovementSince { n_epochs }`: the same as
        `no_improvement_since(n_epochs)`."""
        return cls(n_epochs)


class EarlyStoppingStrategy(ABC):
    """Checked by the learner after each epoch's validation (Burn's trait)."""

    @abstractmethod
    def should_stop(self, epoch: int, store: MetricFinder) -> bool:
        """Update the state with `epoch`'s metrics; whether training should stop now."""

    def watched_metrics(self) -> list[tuple[str, Split]]:
        """The `(metric name, split)` pairs this strategy reads (checked at `build`)."""
        return []

    def to_record(self) -> dict[str, Any]:
        """The strategy's state, for resuming a run."""
        return {}

    def load_record(self, record: dict[str, Any]) -> None:  # noqa: B027 - stateless default
        """Restore the state saved by `to_record`."""


class MetricEarlyStoppingStrategy(ValueBuilder, EarlyStoppingStrategy):
    """Stop when a metric has not improved for `condition.n_epochs` epochs (Burn's strategy).

    Each epoch's `aggregate` of the metric is compared with the best so far; a strictly better
    value (lower for `Direction.LOWEST`) makes that epoch the best. Otherwise training stops
    once `epoch - best_epoch >= n_epochs` — unless `epoch <= warmup_epochs` (Burn's
    `with_warmup_epochs`: the best is still tracked during warm-up, but no stop happens). The
    best epoch starts at 1; an epoch without a value for the metric never stops training.

    Example:
        >>> early_stopping = MetricEarlyStoppingStrategy(
        ...     LossMetric(), Aggregate.MEAN, Direction.LOWEST, Split.VALID,
        ...     StoppingCondition.no_improvement_since(n_epochs=3))

    Args:
        metric: The metric, or its name (e.g. `LossMetric()` or `"Loss"`).
        aggregate: How an epoch's values are reduced (`Aggregate.MEAN`).
        direction: `Direction.LOWEST` for losses, `Direction.HIGHEST` for accuracies.
        split: The split whose logs are read.
        condition: When to stop.
        warmup_epochs: Epochs `1..warmup_epochs` never stop training (None or 0: no warm-up).

    Raises:
        TypeError: if `metric` is neither a metric nor a string, or `condition` is not a
            `StoppingCondition`.
        ValueError: if `aggregate`, `direction`, `split` or `warmup_epochs` is not valid.
    """

    def __init__(
        self,
        metric: Any,
        aggregate: Aggregate,
        direction: Direction,
        split: Split | str,
        condition: StoppingCondition,
        warmup_epochs: int | None = None,
    ) -> None:
        if not isinstance(condition, StoppingCondition):
            raise TypeError(
                f"`condition` must be a StoppingCondition. Received: {condition!r}. "
                "Use `StoppingCondition.no_improvement_since(n_epochs)`."
            )
        self.metric_name = metric_name(metric)
        self.aggregate = Aggregate.parse(aggregate)
        self.direction = Direction.parse(direction)
        self.split = Split.parse(split)
        self.condition = condition
        self._warmup_epochs = _check_warmup(warmup_epochs)
        self.best_epoch = 1
        self.best_value: float | None = None

    def warmup_epochs(self) -> int | None:
        """The warm-up: epochs `1..n` never stop training; None when there is none (Burn's
        getter `warmup_epochs()`)."""
        return self._warmup_epochs

    def with_warmup_epochs(self, warmup_epochs: int | None) -> MetricEarlyStoppingStrategy:
        """Set the warm-up (epochs that never stop training; Burn's
        `with_warmup_epochs(Some(n))` is `with_warmup_epochs(n)`): a new strategy, with this
        one's best epoch and value so far (this one stays as it was)."""
        return self._replace(_warmup_epochs=_check_warmup(warmup_epochs))

    def should_stop(self, epoch: int, store: MetricFinder) -> bool:
        """Whether no improvement happened in the last `n_epochs` epochs (see the class doc)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(f"`epoch` must be an int >= 1. Received: {epoch!r}.")
        value = store.find_metric(self.metric_name, epoch, self.aggregate, self.split)
        if value is None:
            log.warning(
                "Early stopping: no value for metric %r (%s) at epoch %d; is it registered?",
                self.metric_name,
                self.split.value,
                epoch,
            )
            return False
        if self._is_better(value):
            log.info("New best epoch %d: %s = %s", epoch, self.metric_name, value)
            self.best_epoch, self.best_value = epoch, value
            return False
        if self._warmup_epochs is not None and epoch <= self._warmup_epochs:
            return False
        stop = epoch - self.best_epoch >= self.condition.n_epochs
        if stop:
            log.info(
                "Stopping training: no improvement since epoch %d (%s = %s); epoch %d: %s",
                self.best_epoch,
                self.metric_name,
                self.best_value,
                epoch,
                value,
            )
        return stop

    def watched_metrics(self) -> list[tuple[str, Split]]:
        """`[(metric name, split)]` of the watched metric."""
        return [(self.metric_name, self.split)]

    def _is_better(self, value: float) -> bool:
        if math.isnan(value):
            return False
        if self.best_value is None:  # Burn starts from f64::MAX / f64::MIN
            return math.isfinite(value) or (value < 0) == (self.direction is Direction.LOWEST)
        if self.direction is Direction.LOWEST:
            return value < self.best_value
        return value > self.best_value

    def to_record(self) -> dict[str, Any]:
        """`{"best_epoch": int, "best_value": float | None}`."""
        return {"best_epoch": self.best_epoch, "best_value": self.best_value}

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the best epoch and value saved by `to_record`."""
        if not isinstance(record, dict) or set(record) != {"best_epoch", "best_value"}:
            raise RecordError(
                f"A {type(self).__name__} record must be a dict with `best_epoch` and "
                f"`best_value`. Received: {record!r}. Pass what `to_record()` returned."
            )
        best_epoch, best_value = record["best_epoch"], record["best_value"]
        if isinstance(best_epoch, bool) or not isinstance(best_epoch, int) or best_epoch < 1:
            raise RecordError(f"`best_epoch` must be an int >= 1. Received: {best_epoch!r}.")
        self.best_epoch = best_epoch
        self.best_value = None if best_value is None else float(best_value)

    def __repr__(self) -> str:
        return (
            f"MetricEarlyStoppingStrategy({self.metric_name!r}, {self.aggregate}, "
            f"{self.direction}, Split.{self.split.name}, {self.condition}, "
            f"warmup_epochs={self._warmup_epochs})"
        )


def _check_warmup(warmup_epochs: int | None) -> int | None:
    if warmup_epochs is None:
        return None
    if isinstance(warmup_epochs, bool) or not isinstance(warmup_epochs, int) or warmup_epochs < 0:
        raise ValueError(
            f"`warmup_epochs` must be None or an int >= 0. Received: {warmup_epochs!r}."
        )
    return warmup_epochs

"""The learning rate as a metric (Burn's `LearningRateMetric`)."""

from __future__ import annotations

from typing import Any

from burnish.train.metric.base import MetricMetadata, NumericEntry
from burnish.train.metric.state import StatefulNumeric

__all__ = ["LearningRateMetric"]


class LearningRateMetric(StatefulNumeric):
    """The learning rate of each iteration (`metadata.lr`, 0.0 when None as in Burn).

    The epoch value is the mean learning rate over the epoch's iterations. Host-side: the
    entries are floats, nothing touches the device.
    """

    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self.name = "Learning Rate"

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Record this iteration's learning rate; `item` is ignored."""
        lr = metadata.lr if metadata.lr is not None else 0.0
        return self.state.update(float(lr), 1)

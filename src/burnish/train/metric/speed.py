"""Iterations per second (Burn's `IterationSpeedMetric`)."""

from __future__ import annotations

import time
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, Numeric, NumericEntry

__all__ = ["IterationSpeedMetric"]


class IterationSpeedMetric(Numeric):
    """Iterations per second since the first iteration of the epoch.

    The clock starts at the epoch's first update (whose entry is 0.0, as in Burn); later
    entries are `(iteration - first_iteration) / elapsed`, already an epoch average, so
    `value()` is the latest one. The clock reads when the host queued an iteration: without
    syncs the device may lag by a few iterations, which vanishes over an epoch.

    The record is empty: after a resume the clock restarts.
    """

    higher_is_better = True
    unit = "iter/sec"

    def __init__(self) -> None:
        self.name = "Iteration Speed"
        self._start: tuple[int, float] | None = None
        self._current = 0.0

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Record that iteration `metadata.iteration` was reached; `item` is ignored."""
        now = time.perf_counter()
        if self._start is None:
            self._start = (metadata.iteration, now)
            self._current = 0.0
        else:
            first_iteration, start = self._start
            elapsed = now - start
            done = metadata.iteration - first_iteration
            self._current = done / elapsed if elapsed > 0 else 0.0
        return NumericEntry(self._current, 1)

    def value(self) -> torch.Tensor:
        """The epoch's iterations per second so far."""
        return torch.tensor(self._current, dtype=torch.float64)

    def clear(self) -> None:
        """Stop the clock; the next epoch starts a new one."""
        self._start = None
        self._current = 0.0

"""Overall training progress and its time estimate (Burn's TUI progress bar)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from burnish.train.renderer.base import TrainingProgress

__all__ = ["ProgressEstimate", "format_eta", "training_fraction"]

# Burn's warm-up: start timing once 10 iterations and 10 s have passed, or after 30 s anyway,
# so start-up costs (data loader workers, compilation, caches) do not skew the estimate.
WARMUP_ITERATIONS = 10
WARMUP_MIN_S = 10.0
WARMUP_MAX_S = 30.0


def training_fraction(progress: TrainingProgress) -> float:
    """The fraction of all training items done.

    `fraction = ((epoch - 1) * items_total + items_processed) / (epoch_total * items_total)`.
    """
    if progress.items_total <= 0 or progress.epoch_total <= 0:
        return 0.0
    done = (progress.epoch - 1) * progress.items_total + progress.items_processed
    return min(1.0, max(0.0, done / (progress.epoch_total * progress.items_total)))


class ProgressEstimate:
    """Estimates the remaining training time from the train split's progress.

    The rate is measured from the end of a warm-up, so a resumed run (starting at a later
    epoch) estimates from the items it actually processed.

    Args:
        clock: A monotonic clock in seconds (injectable for tests).
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._started = clock()
        self._warm_at: float | None = None
        self._warm_fraction = 0.0
        self.fraction = 0.0

    def update(self, progress: TrainingProgress) -> None:
        """Record the latest train progress."""
        self.fraction = training_fraction(progress)
        if self._warm_at is not None:
            return
        elapsed = self._clock() - self._started
        warm = elapsed > WARMUP_MAX_S or (
            progress.iteration >= WARMUP_ITERATIONS and elapsed > WARMUP_MIN_S
        )
        if warm:
            self._warm_at = self._clock()
            self._warm_fraction = self.fraction

    def remaining_s(self) -> float | None:
        """Seconds left, or None while warming up or when no progress was measured yet."""
        if self._warm_at is None:
            return None
        done = self.fraction - self._warm_fraction
        elapsed = self._clock() - self._warm_at
        if done <= 0.0 or elapsed <= 0.0:
            return None
        return elapsed / done * (1.0 - self.fraction)


def format_eta(seconds: float | None) -> str:
    """Format a duration like Burn's ETA: the largest unit only ("3 mins", "1 hour")."""
    if seconds is None or not math.isfinite(seconds):
        return "---"
    secs = int(seconds)
    for unit, size in (("day", 86400), ("hour", 3600), ("min", 60)):
        count = secs // size
        if count >= 1:
            return f"{count} {unit}" + ("s" if count > 1 else "")
    return f"{max(secs, 1)} sec" + ("s" if secs > 1 else "")

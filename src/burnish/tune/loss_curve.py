"""The range test's loss curve on the host: smoothed, where it diverges, where it falls fastest.

Pure functions of Python floats, total over any values: an empty curve, one point, a constant
curve, NaN, infinities, values near the float limits and subnormal ones give an answer (None
where there is none), never an exception or an overflow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_beta",
    "check_threshold",
    "divergence_index",
    "smooth_losses",
    "steepest_descent_index",
]

# Above this, values are scaled by a power of two (exact) so that sums cannot overflow.
_HUGE = 2.0**1000


def smooth_losses(losses: Sequence[float], beta: float = 0.98) -> list[float]:
    """The bias-corrected exponential moving average of `losses` (fastai's, Lightning's).

    `average_k = beta * average_(k-1) + (1 - beta) * loss_k` from `average_(-1) = 0`, and
    `smoothed_k = average_k / (1 - beta ** (k + 1))`: the first point is the first loss, each
    later one a weighted mean of the losses so far, so it lies between their least and greatest
    (it is held there against rounding). From the first non-finite loss on, every point is NaN:
    the sweep diverged there.

    Args:
        losses: the losses in sweep order.
        beta: how much of the past each point keeps, in `[0, 1)` (0: no smoothing).

    Raises:
        ValueError: if `beta` is not in `[0, 1)`.
    """
    check_beta(beta)
    peak = max((abs(x) for x in losses if math.isfinite(x)), default=0.0)
    scale = math.ldexp(1.0, math.frexp(peak)[1] - 1) if peak > _HUGE else 1.0  # <= max float
    smoothed: list[float] = []
    average, weight, low, high = 0.0, 1.0, math.inf, -math.inf
    for loss in losses:
        if (smoothed and math.isnan(smoothed[-1])) or not math.isfinite(loss):
            smoothed.append(math.nan)
            continue
        low, high = min(low, loss), max(high, loss)
        average = beta * average + (1.0 - beta) * (loss / scale)
        weight *= beta
        smoothed.append(min(max(average / (1.0 - weight) * scale, low), high))
    return smoothed


def divergence_index(smoothed: Sequence[float], threshold: float | None = 4.0) -> int | None:
    """The first point where the sweep diverged, or None.

    A point diverges when it is not finite, or (from the second point on, with a
    `threshold`) when it exceeds the best point before it by more than `threshold - 1` times
    the best's size: `smoothed > threshold * best` for a positive best (Lightning's and
    fastai's rule), measured from the best for a negative one.

    Args:
        smoothed: the smoothed losses (`smooth_losses`).
        threshold: how many times the best loss counts as diverged (> 1); None: only a
            non-finite loss stops the sweep.
    """
    best = math.inf
    for index, value in enumerate(smoothed):
        if not math.isfinite(value):
            return index
        if threshold is not None and index > 0 and value - best > (threshold - 1.0) * abs(best):
            return index
        best = min(best, value)
    return None


def steepest_descent_index(
    lrs: Sequence[float], smoothed: Sequence[float], skip_begin: int = 10, skip_end: int = 1
) -> int | None:
    """The point where the smoothed loss falls fastest against `log(lr)`, or None.

    The slope is `numpy.gradient`'s of the loss over `log(lr)` (central differences, one-sided
    at the ends) across the points kept: not among the first `skip_begin` or the last
    `skip_end`, finite, and each at a greater `log(lr)` than the one before. Lightning's
    `suggestion()` skips the same points; on the log axis the report draws, a steepest slope is
    what the eye picks. None: fewer than two points kept, or the loss falls nowhere.

    Args:
        lrs: the learning rates, increasing, positive.
        smoothed: the smoothed loss at each rate.
        skip_begin: points left out at the start (too early to judge).
        skip_end: points left out at the end (where the loss turns up).
    """
    kept: list[int] = []
    for index in range(max(skip_begin, 0), min(len(lrs), len(smoothed)) - max(skip_end, 0)):
        lr, value = lrs[index], smoothed[index]
        if not (math.isfinite(value) and math.isfinite(lr) and lr > 0):
            continue
        if kept and not math.log(lr) > math.log(lrs[kept[-1]]):
            continue
        kept.append(index)
    if len(kept) < 2:
        return None
    peak = max(abs(smoothed[i]) for i in kept)
    if peak == 0.0:
        return None
    # Scaled by the largest size (the slopes' order is the same): no difference overflows.
    values = np.array([smoothed[i] / peak for i in kept], dtype=np.float64)
    positions = np.log(np.array([lrs[i] for i in kept], dtype=np.float64))
    slopes = _gradient(values, positions)
    steepest = int(np.argmin(slopes))
    return kept[steepest] if slopes[steepest] < 0 else None


def _gradient(values: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """`numpy.gradient(values, positions)` (second order inside, first at the ends), written
    as each point's mean of its two one-sided slopes, weighted by the opposite spacing: a flat
    stretch has slope exactly 0 (no rounding of `a*y0 + b*y1 + c*y2` with `a+b+c = 0`). A NaN
    slope (infinities of both signs) is +inf: no descent."""
    with np.errstate(all="ignore"):
        spacing = np.diff(positions)
        one_sided = np.diff(values) / spacing
        before, after = spacing[:-1], spacing[1:]
        inside = (after * one_sided[:-1] + before * one_sided[1:]) / (before + after)
        slopes = np.concatenate([one_sided[:1], inside, one_sided[-1:]])
    slopes[np.isnan(slopes)] = np.inf
    return slopes


def check_beta(beta: float) -> None:
    """Raise unless `beta` is a number in `[0, 1)`."""
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not 0.0 <= beta < 1.0:
        raise ValueError(
            "`beta` (the loss smoothing) must be a number in [0, 1): 0.98 keeps about the "
            f"last 50 losses, 0 none. Received: beta={beta!r}."
        )


def check_threshold(threshold: Any) -> None:
    """Raise unless `threshold` is None or a finite number > 1."""
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(
            f"`early_stop_threshold` must be a number or None. Received: {threshold!r}."
        )
    if not (math.isfinite(threshold) and threshold > 1.0):
        raise ValueError(
            "`early_stop_threshold` must be finite and > 1 (the sweep stops when the smoothed "
            "loss exceeds that many times its best; Lightning's default is 4), or None. "
            f"Received: early_stop_threshold={threshold!r}."
        )

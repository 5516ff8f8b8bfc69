"""A metric's per-iteration curve for `burnish report`, thinned while it is read.

A split's logs may hold millions of lines; the chart shows at most `POINTS` of them. The logs
are read twice, a block at a time (`numeric_lines`): once to count each epoch's entries (which
fixes every point's `x` and the thinning's groups), once to average the points of each group.
Memory holds the groups' sums, never the lines. The result is what `svg.downsample` makes of
the whole curve: consecutive points in equal groups of `ceil(n / POINTS)`, each group the mean
`(x, y)` of its points with a finite value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from burnish.train.logger.numeric_lines import count_entries

if TYPE_CHECKING:
    from burnish.train.logger.file import FileMetricLogger

__all__ = ["POINTS", "iteration_curve"]

POINTS = 1200
"""The most points a curve keeps (`svg.downsample`'s limit)."""


def iteration_curve(
    logger: FileMetricLogger,
    name: str,
    spans: Sequence[tuple[int, float, float]],
    limit: int = POINTS,
) -> list[tuple[float, float]]:
    """The `(x, value)` points of `name`'s iterations over `spans` (`(epoch, start, end)`),
    thinned to at most `limit` points.

    The `k`-th of an epoch's `n` entries lies at `start + (end - start) * k / n` (k from 1).
    An epoch whose log is not numeric (a text metric, a damaged log) adds no point.
    """
    paths = {epoch: logger.file_path(name, epoch) for epoch, _, _ in spans}
    sizes = {epoch: count_entries(paths[epoch]) for epoch, _, _ in spans}
    while True:
        curve = _Curve(sum(sizes.values()), limit)
        try:
            for epoch, start, end in spans:
                _add_epoch(curve, logger, name, epoch, start, end, sizes[epoch])
        except _Unreadable as unreadable:  # read again without it: the groups change
            sizes[unreadable.epoch] = 0
            continue
        return curve.points()


class _Unreadable(Exception):
    def __init__(self, epoch: int) -> None:
        self.epoch = epoch


def _add_epoch(
    curve: _Curve,
    logger: FileMetricLogger,
    name: str,
    epoch: int,
    start: float,
    end: float,
    size: int,
) -> None:
    if size == 0:
        return
    done = 0
    try:
        for values, _ in logger.read_numeric_chunks(name, epoch):
            k = np.arange(done + 1, done + values.size + 1, dtype=np.float64)
            curve.add(start + (end - start) * k / size, values)
            done += values.size
    except ValueError:
        raise _Unreadable(epoch) from None
    if done != size:  # the file changed between the passes (a run still writing)
        raise _Unreadable(epoch)


class _Curve:
    """Points in order; past `limit` of them, the running sums of each group's points."""

    def __init__(self, total: int, limit: int) -> None:
        self.size = math.ceil(total / limit) if total > limit else 1
        groups = math.ceil(total / self.size) if total else 0
        self.index = 0  # the next point's index in the whole curve
        self.x = np.zeros(groups)
        self.y = np.zeros(groups)
        self.finite = np.zeros(groups)
        self.kept: list[tuple[float, float]] = []

    def add(self, x: np.ndarray, y: np.ndarray) -> None:
        if self.size == 1:  # short: every point, as it is
            self.kept += zip(x.tolist(), y.tolist())
            return
        finite = np.isfinite(y)
        group = (np.arange(self.index, self.index + y.size) // self.size)[finite]
        # Each term divided first: sums of values near the float limit stay finite.
        self.x += np.bincount(group, x[finite] / self.size, minlength=self.x.size)
        self.y += np.bincount(group, y[finite] / self.size, minlength=self.y.size)
        self.finite += np.bincount(group, minlength=self.finite.size)
        self.index += y.size

    def points(self) -> list[tuple[float, float]]:
        if self.size == 1:
            return self.kept
        seen = self.finite > 0
        share = self.finite[seen] / self.size
        return list(zip((self.x[seen] / share).tolist(), (self.y[seen] / share).tolist()))

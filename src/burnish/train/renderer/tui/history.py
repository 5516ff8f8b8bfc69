"""Bounded point series behind the dashboard's plots (Burn's full and recent history)."""

from __future__ import annotations

import math

from burnish.train.renderer.base import TrainingProgress
from burnish.train.split import Split

__all__ = ["MetricHistory", "Series"]

# Burn keeps 250 points for the full history (smooth lines) and 1000 for the recent one.
MAX_POINTS_FULL = 250
MAX_POINTS_RECENT = 1000

Point = tuple[float, float]


class Series:
    """A list of `(x, y)` points that never exceeds `max_points`.

    When full it keeps every other point and from then on accepts one point in two more
    (Burn's `FullHistoryPoints`), so memory stays bounded over any run length while the points
    stay evenly spread along x.

    Args:
        max_points: The most points kept (>= 2).
    """

    def __init__(self, max_points: int) -> None:
        if max_points < 2:
            raise ValueError(f"`max_points` must be >= 2. Received: max_points={max_points}.")
        self.max_points = max_points
        self.points: list[Point] = []
        self._stride = 1
        self._offered = 0

    def push(self, x: float, y: float) -> None:
        """Offer a point; it is kept when it falls on the current stride."""
        index = self._offered
        self._offered += 1
        if index % self._stride:
            return
        self.points.append((x, y))
        if len(self.points) > self.max_points:
            self.points = self.points[::2]
            self._stride *= 2

    def clear(self) -> None:
        """Forget every point and reset the stride."""
        self.points.clear()
        self._stride = 1
        self._offered = 0


class MetricHistory:
    """The train and valid series of every numeric metric, in order of first appearance.

    Full history plots x in epochs (epoch `e` spans `[e - 1, e]` for both splits, so train and
    valid line up); recent history plots the current epoch only, x in `[0, 1]`.
    """

    def __init__(
        self, max_points_full: int = MAX_POINTS_FULL, max_points_recent: int = MAX_POINTS_RECENT
    ) -> None:
        self._max_full = max_points_full
        self._max_recent = max_points_recent
        self.names: list[str] = []
        self._full: dict[tuple[str, str], Series] = {}
        self._recent: dict[tuple[str, str], Series] = {}
        self._recent_epoch: dict[str, int] = {}
        self._pushed_epoch: dict[str, int] = {}  # split -> epoch of its latest pushed point

    def push(self, split: str, progress: TrainingProgress, values: dict[str, float]) -> None:
        """Add the current value of each metric at `progress` (non-finite values are skipped)."""
        self._start_epoch(split, progress.epoch)
        self._pushed_epoch[split] = progress.epoch
        x_full = progress.epoch - 1 + progress.fraction
        for name, value in values.items():
            self._add(split, name, x_full, progress.fraction, value)

    def end_epoch(self, split: str, epoch: int, values: dict[str, float]) -> None:
        """Take in `epoch`'s final values; they become its points if it got none.

        Under torchrun the values arrive every `sync_every` iterations: an epoch shorter than
        that reaches the dashboard only here, as one point per metric at its end.
        """
        for name in values:
            if name not in self.names:
                self.names.append(name)
        if self._pushed_epoch.get(split) == epoch:
            return
        self._start_epoch(split, epoch)
        self._pushed_epoch[split] = epoch
        for name, value in values.items():
            self._add(split, name, float(epoch), 1.0, value)

    def _start_epoch(self, split: str, epoch: int) -> None:
        """Clear `split`'s recent series when `epoch` is a new one."""
        if self._recent_epoch.get(split) != epoch:
            self._recent_epoch[split] = epoch
            for (series_split, _), series in self._recent.items():
                if series_split == split:
                    series.clear()

    def _add(self, split: str, name: str, x_full: float, x_recent: float, value: float) -> None:
        if name not in self.names:
            self.names.append(name)
        if not math.isfinite(value):
            return
        key = (split, name)
        if key not in self._full:
            self._full[key] = Series(self._max_full)
            self._recent[key] = Series(self._max_recent)
        self._full[key].push(x_full, value)
        self._recent[key].push(x_recent, value)

    def series(self, name: str, recent: bool = False) -> dict[str, list[Point]]:
        """Split -> a copy of its points for metric `name` (splits without points are left out)."""
        store = self._recent if recent else self._full
        return {
            split: list(store[(split, name)].points)
            for split in Split
            if (split, name) in store and store[(split, name)].points
        }

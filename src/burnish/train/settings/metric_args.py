"""The metrics a `.metrics(..)` call was given, in Burn's form or burnish's.

Burn main's `metrics` and `metrics_text` take one tuple (`.metrics((AccuracyMetric::new(),
LossMetric::new()))`, a Rust tuple of metrics); burnish's take the metrics as arguments
(`.metrics(AccuracyMetric(), LossMetric())`). Both are accepted, and a list like the tuple.
"""

from __future__ import annotations

from typing import Any

__all__ = ["metrics_of"]


def metrics_of(metrics: tuple[Any, ...]) -> tuple[Any, ...]:
    """The metrics of `metrics(*metrics)`: a tuple or list among the arguments is unpacked.

    Example:
        >>> metrics_of((("a", "b"),))
        ('a', 'b')
        >>> metrics_of(("a", ["b", "c"]))
        ('a', 'b', 'c')
    """
    flat: list[Any] = []
    for metric in metrics:
        if isinstance(metric, (tuple, list)):
            flat.extend(metric)
        else:
            flat.append(metric)
    return tuple(flat)

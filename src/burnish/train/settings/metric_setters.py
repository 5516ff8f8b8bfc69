"""`MetricSetters`: the metrics of each split (Burn's `metric_*` and `metrics` methods)."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING

from burnish.train.settings.setters import Setters
from burnish.train.split import Split

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.train.metric.base import Metric

__all__ = ["MetricSetters"]


class MetricSetters(Setters):
    """The metric setters of `TrainingBuilder`."""

    def metric_train_numeric(self, metric: Metric) -> Self:
        """Register a numeric training metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric(Split.TRAIN, metric, numeric=True)

    def metric_valid_numeric(self, metric: Metric) -> Self:
        """Register a numeric validation metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric(Split.VALID, metric, numeric=True)

    def metric_train(self, metric: Metric) -> Self:
        """Register a training metric shown as text in the dashboard and logged as text."""
        return self._add_metric(Split.TRAIN, metric, numeric=False)

    def metric_valid(self, metric: Metric) -> Self:
        """Register a validation metric shown as text in the dashboard and logged as text."""
        return self._add_metric(Split.VALID, metric, numeric=False)

    def metrics(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register numeric metrics on both splits at once (Burn: `.metrics((a, b, c))`).

        Burn's one tuple (`.metrics((AccuracyMetric(), LossMetric()))`) or a list works as the
        metrics given one by one (`.metrics(AccuracyMetric(), LossMetric())`).

        Each metric is logged per epoch and plotted in the dashboard for training and
        validation; the validation split gets its own copy, so the two never share a state.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> from burnish.train.metric import AccuracyMetric, LossMetric
            >>> builder = LearnerBuilder("artifacts").metrics(AccuracyMetric(), LossMetric())
        """
        from burnish.train.metric.base import Numeric
        from burnish.train.settings.metric_args import metrics_of

        flat: tuple[Metric, ...] = metrics_of(metrics)
        for metric in flat:
            if not isinstance(metric, Numeric):
                raise TypeError(
                    f"`metrics` takes Numeric metrics; {type(metric).__name__} is not one. "
                    "Register it with `metrics_text(...)` instead."
                )
        return self._add_metrics(_on_both_splits(flat), numeric=True)

    def metrics_text(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register text metrics on both splits at once (Burn: `.metrics_text((a, b))`; a
        tuple or list, or the metrics one by one)."""
        from burnish.train.settings.metric_args import metrics_of

        return self._add_metrics(_on_both_splits(metrics_of(metrics)), numeric=False)

    def _add_metric(self, split: Split, metric: Metric, numeric: bool) -> Self:
        return self._add_metrics([(split, metric)], numeric)

    def _add_metrics(self, added: Iterable[tuple[Split, Metric]], numeric: bool) -> Self:
        """A new builder with `added` registered, each (split, metric) in order."""
        metrics = {split: list(registered) for split, registered in self._settings.metrics.items()}
        for split, metric in added:
            _append_metric(metrics[split], split, metric, numeric)
        return self._with(metrics={split: tuple(ms) for split, ms in metrics.items()})


def _append_metric(registered: list[Metric], split: Split, metric: Metric, numeric: bool) -> None:
    """Append `metric` (and its companions) to `registered`, the metrics of `split`."""
    from burnish.train.metric.base import Metric, Numeric

    if not isinstance(metric, Metric):
        raise TypeError(
            f"Metrics must implement burnish.train.metric.Metric. Received: {metric!r}."
        )
    if numeric and not isinstance(metric, Numeric):
        raise TypeError(
            f"`metric_{split}_numeric` takes a Numeric metric; {type(metric).__name__} is "
            f"not one. Register it with `metric_{split}(...)` instead."
        )
    if any(m.name == metric.name for m in registered):
        raise ValueError(
            f"A {split} metric named {metric.name!r} is already registered; each name "
            "is a log file, so register each metric once per split."
        )
    registered.append(metric)
    for companion in metric.companions():  # e.g. ThroughputMetric's MFU
        _append_metric(registered, split, companion, numeric)


def _on_both_splits(metrics: Iterable[Metric]) -> list[tuple[Split, Metric]]:
    """Each metric on the train split and a copy of it on the valid split (no shared state)."""
    return [pair for m in metrics for pair in ((Split.TRAIN, m), (Split.VALID, copy.deepcopy(m)))]

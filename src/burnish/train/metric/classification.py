"""Precision, recall and F-beta from confusion counts (Burn's `PrecisionMetric`, ...).

Each metric is built for one task, as in Burn:

- `binary(threshold)`: one score column, positive when `score > threshold`;
- `multiclass(top_k, class_reduction)`: the `top_k` best classes of each item are predicted
  (ranked as `torch.argmax` ranks them: ties to the first class, NaN highest);
- `multilabel(threshold, class_reduction)`: every class with `score > threshold` is predicted
  (a NaN score is never above a threshold).

A score is compared with the threshold in its own dtype, as `scores > threshold` is in torch
and in Burn: a float32 score of 0.3 is not above the threshold 0.3.

Epoch value (Burn 0.22's): the ratio of the confusion counts of the whole epoch — true
positives, predicted positives and positives per class, summed over its batches — not a mean
of batch ratios. `ClassReduction.MICRO` pools the counts of all classes before the ratio;
`MACRO` averages the per-class ratios; `WEIGHTED` (scikit-learn's `average="weighted"`, not
in Burn) averages them weighted by each class's positives. A ratio whose denominator is 0
(precision of a class never predicted, recall of a class without positives) counts as 0, as
in Burn, scikit-learn and torchmetrics; a class that never occurs in the epoch — neither
predicted nor a target — is left out of the macro mean (as scikit-learn's label set does;
Burn counts it as 0). A value with nothing to average (nothing predicted and no positive in
the whole epoch; for `WEIGHTED`, no positive) is undefined: NaN. Values are percentages in
[0, 100].

The state (`state.sum`) holds the counts, divided by the items seen, as a `[3, classes]`
tensor (`[3, 1]` pooled for micro); `finish` turns them into the value, so the states of
several processes add up to the epoch's counts over all of them.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, TypeVar

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.ranking import top_k_mask
from burnish.train.metric.state import StatefulNumeric

__all__ = [
    "ClassReduction",
    "ConfusionStatsInput",
    "FBetaScoreMetric",
    "PrecisionMetric",
    "RecallMetric",
]


class ClassReduction(str, enum.Enum):
    """How per-class counts become one number (Burn: `ClassReduction`; `Micro`/`Macro` work).

    `MICRO` pools the counts of all classes, `MACRO` averages the per-class values, `WEIGHTED`
    averages them weighted by each class's positives (scikit-learn's; not in Burn).
    """

    MICRO = "micro"
    MACRO = "macro"
    WEIGHTED = "weighted"
    Micro = "micro"  # Burn's spelling (aliases)
    Macro = "macro"


@dataclasses.dataclass
class ConfusionStatsInput:
    """Input of precision, recall and F-beta.

    Attributes:
        predictions: scores, shape `[batch_size, num_classes]` (`[batch_size, 1]` for binary).
        targets: bool (or 0/1) truth of the same shape: one-hot for multiclass.
    """

    predictions: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `predictions`)."""
        return self.predictions.shape[0]


@dataclasses.dataclass(frozen=True)
class _DecisionRule:
    threshold: float | None
    top_k: int | None

    def __str__(self) -> str:  # Burn's Debug formatting, part of the metric's name
        if self.top_k is not None:
            return f"TopK({self.top_k})"
        return f"Threshold({_rust_float(self.threshold)})"

    def predict(self, scores: torch.Tensor) -> torch.Tensor:
        if self.top_k is None:
            assert self.threshold is not None  # a rule has a threshold or a top k
            return scores > self.threshold
        return top_k_mask(scores, self.top_k)


def _class_reduction(value: ClassReduction | str) -> ClassReduction:
    try:
        return ClassReduction(value.lower() if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(
            "`class_reduction` must be ClassReduction.MICRO, MACRO or WEIGHTED (or 'micro', "
            f"'macro', 'weighted'). Received: class_reduction={value!r}."
        ) from None


def _rust_float(value: float | None) -> str:
    text = repr(value if value is None else float(value))
    return text[:-2] if text.endswith(".0") else text


def _one_column(metric: _M) -> _M:
    metric.binary_column = True
    return metric


def _binary_shape_message(metric: str, scores: torch.Tensor) -> str:
    return (
        f"{metric}.binary expects one score column [batch_size, 1]: the positive class's "
        f"probability, thresholded. Received: predictions {list(scores.shape)}. With two-class "
        f"logits [batch_size, 2], either output `softmax(logits, dim=1)[:, 1:]` (and targets "
        f"[batch_size, 1]) for the positive class, or use {metric}.multiclass(...) for "
        "argmax decisions per class."
    )


def _counts(
    data: ConfusionStatsInput, rule: _DecisionRule, reduction: ClassReduction, metric: str
) -> torch.Tensor:
    """True positives, predicted positives and positives, `[3, classes]` (`[3, 1]` for micro)."""
    scores, truth = data.predictions, data.targets
    if scores.ndim != 2 or truth.shape != scores.shape:
        raise ValueError(
            f"{metric} expects predictions and targets of the same shape "
            f"[batch_size, num_classes]. Received: predictions {list(scores.shape)}, "
            f"targets {list(truth.shape)}. One-hot encode multiclass targets."
        )
    if rule.top_k is not None and rule.top_k > scores.shape[1]:
        raise ValueError(
            f"{metric}: top_k={rule.top_k} exceeds the number of classes. Received: "
            f"predictions with {scores.shape[1]} classes. Use top_k <= {scores.shape[1]}."
        )
    predicted, truth = rule.predict(scores), truth.bool()
    counts = torch.stack((predicted & truth, predicted, truth)).sum(dim=1)
    if reduction is ClassReduction.MICRO:
        counts = counts.sum(dim=1, keepdim=True)
    return counts


_M = TypeVar("_M", bound="_ConfusionMetric")


class _ConfusionMetric(StatefulNumeric):
    """Shared constructor, naming and update of the confusion-count metrics."""

    input_type = ConfusionStatsInput
    binary_column = False  # built by `binary()`: one score column only
    higher_is_better = True
    unit = "%"
    _title = ""

    def __init__(
        self,
        *,
        threshold: float | None = None,
        top_k: int | None = None,
        class_reduction: ClassReduction | str = ClassReduction.MACRO,
    ) -> None:
        super().__init__()
        if threshold is not None and top_k is not None:
            raise ValueError(
                f"{type(self).__name__} takes a `threshold` or a `top_k`, not both. "
                f"Received: threshold={threshold}, top_k={top_k}. Use `.binary(threshold)`, "
                "`.multiclass(top_k, class_reduction)` or `.multilabel(threshold, ...)`."
            )
        if top_k is not None and top_k < 1:
            raise ValueError(f"`top_k` must be >= 1. Received: top_k={top_k}.")
        self.rule = _DecisionRule(0.5 if threshold is None and top_k is None else threshold, top_k)
        self.class_reduction = _class_reduction(class_reduction)
        reduction = self.class_reduction.name.title()
        self.name = f"{self._title} @ {self.rule} [{reduction}]"

    @classmethod
    def binary(cls: type[_M], threshold: float = 0.5) -> _M:
        """One score column `[batch_size, 1]` (the positive class's probability), positive
        when `score > threshold`; other shapes are refused (see `update`)."""
        return _one_column(cls(threshold=threshold))

    @classmethod
    def multiclass(
        cls: type[_M], top_k: int = 1, class_reduction: ClassReduction | str = ClassReduction.MACRO
    ) -> _M:
        """The `top_k` best classes of each item are its predictions."""
        return cls(top_k=top_k, class_reduction=class_reduction)

    @classmethod
    def multilabel(
        cls: type[_M],
        threshold: float = 0.5,
        class_reduction: ClassReduction | str = ClassReduction.MACRO,
    ) -> _M:
        """Every class with `score > threshold` is predicted."""
        return cls(threshold=threshold, class_reduction=class_reduction)

    def _fraction(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover
        """The numerator and denominator of the per-class value."""
        raise NotImplementedError

    def finish(self, mean: torch.Tensor) -> torch.Tensor:
        """The value in percent from the counts `state.sum / state.count` (`[3, classes]`).

        The counts may be scaled by any positive factor (here: divided by the items).
        """
        if mean.dim() != 2:  # the state of an epoch without any batch
            return mean.reshape(())
        true_pos, predicted_pos, pos = mean.unbind(0)
        numerator, denominator = self._fraction(true_pos, predicted_pos, pos)
        ratio = numerator / torch.where(denominator > 0, denominator, 1.0)  # 0/0 counts as 0
        if self.class_reduction is ClassReduction.WEIGHTED:
            weight = pos
        else:  # a class counts once it occurs: predicted or a target (tp + fp + fn > 0)
            weight = (predicted_pos + pos - true_pos > 0).to(ratio.dtype)
        # A mean of ratios in [0, 1]; clamped against the last ulp of rounding (100.00000000000001)
        return ((ratio * weight).sum() * 100.0 / weight.sum()).clamp(0.0, 100.0)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch's confusion counts; returns the batch's value in percent (a tensor)."""
        data = adapt(item, ConfusionStatsInput)
        if self.binary_column and data.predictions.shape[1:] != (1,):
            raise ValueError(_binary_shape_message(type(self).__name__, data.predictions))
        counts = _counts(data, self.rule, self.class_reduction, type(self).__name__)
        scaled = self.state.add(counts, data.batch_size)
        return NumericEntry(self.finish(scaled), data.batch_size)


class PrecisionMetric(_ConfusionMetric):
    """Precision `tp / (tp + fp)` in percent.

    Example:
        >>> PrecisionMetric.multiclass(top_k=1, class_reduction="micro").name
        'Precision @ TopK(1) [Micro]'
    """

    _title = "Precision"

    def _fraction(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return true_pos, predicted_pos


class RecallMetric(_ConfusionMetric):
    """Recall `tp / (tp + fn)` in percent (same constructors as `PrecisionMetric`)."""

    _title = "Recall"

    def _fraction(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return true_pos, pos


class FBetaScoreMetric(_ConfusionMetric):
    """F-beta score `(1 + b²) tp / ((1 + b²) tp + b² fn + fp)` in percent.

    `beta` weighs recall `beta` times as much as precision; `beta=1` is the F1 score.

    Raises:
        ValueError: if `beta <= 0`.
    """

    _title = "FBetaScore"

    def __init__(
        self,
        beta: float = 1.0,
        *,
        threshold: float | None = None,
        top_k: int | None = None,
        class_reduction: ClassReduction | str = ClassReduction.MACRO,
    ) -> None:
        if not beta > 0:
            raise ValueError(f"`beta` must be > 0. Received: beta={beta}.")
        self.beta = float(beta)
        self._title = f"FBetaScore ({_rust_float(beta)})"
        super().__init__(threshold=threshold, top_k=top_k, class_reduction=class_reduction)

    @classmethod
    def binary(cls, beta: float, threshold: float = 0.5) -> FBetaScoreMetric:  # type: ignore[override]
        """One score column `[batch_size, 1]`, positive when `score > threshold`."""
        return _one_column(cls(beta, threshold=threshold))

    @classmethod
    def multiclass(  # type: ignore[override]
        cls,
        beta: float,
        top_k: int = 1,
        class_reduction: ClassReduction | str = ClassReduction.MACRO,
    ) -> FBetaScoreMetric:
        """The `top_k` best classes of each item are its predictions."""
        return cls(beta, top_k=top_k, class_reduction=class_reduction)

    @classmethod
    def multilabel(  # type: ignore[override]
        cls,
        beta: float,
        threshold: float = 0.5,
        class_reduction: ClassReduction | str = ClassReduction.MACRO,
    ) -> FBetaScoreMetric:
        """Every class with `score > threshold` is predicted."""
        return cls(beta, threshold=threshold, class_reduction=class_reduction)

    def _fraction(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        # (1 + b²) tp / ((1 + b²) tp + b² fn + fp), with fn = pos - tp and fp = pred - tp
        beta_sq = self.beta**2
        return (1.0 + beta_sq) * true_pos, beta_sq * pos + predicted_pos

"""Precision, recall and F-beta from confusion counts (Burn's `PrecisionMetric`, ...).

Each metric is built for one task, as in Burn:

- `binary(threshold)`: one score column, positive when `score > threshold`;
- `multiclass(top_k, class_reduction)`: the `top_k` best classes of each item are predicted;
- `multilabel(threshold, class_reduction)`: every class with `score > threshold` is predicted.

Counts are per class; `ClassReduction.MICRO` pools them over classes before the ratio,
`ClassReduction.MACRO` averages the per-class ratios, skipping classes where the ratio is
undefined (no predicted positive for precision, no positive for recall), as Burn does. The
batch values are averaged over the epoch weighted by batch size; a batch whose value is
undefined altogether is left out of the epoch value instead of making it NaN.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, TypeVar

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric

__all__ = [
    "ClassReduction",
    "ConfusionStatsInput",
    "FBetaScoreMetric",
    "PrecisionMetric",
    "RecallMetric",
]


class ClassReduction(str, enum.Enum):
    """How per-class counts become one number (Burn: `ClassReduction`; `Micro`/`Macro` work)."""

    MICRO = "micro"
    MACRO = "macro"
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
        best = scores.topk(self.top_k, dim=1).indices
        return torch.zeros_like(scores, dtype=torch.bool).scatter_(1, best, True)


def _class_reduction(value: ClassReduction | str) -> ClassReduction:
    try:
        return ClassReduction(value.lower() if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(
            "`class_reduction` must be ClassReduction.MICRO or ClassReduction.MACRO (or "
            f"'micro' / 'macro'). Received: class_reduction={value!r}."
        ) from None


def _rust_float(value: float | None) -> str:
    text = repr(value if value is None else float(value))
    return text[:-2] if text.endswith(".0") else text


def _counts(
    data: ConfusionStatsInput, rule: _DecisionRule, reduction: ClassReduction, metric: str
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """True positives, predicted positives and positives: per class (macro) or pooled (micro)."""
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
    dims = (1, 2) if reduction is ClassReduction.MICRO else (1,)
    counts = torch.stack((predicted & truth, predicted, truth)).sum(dim=dims).double()
    return counts[0], counts[1], counts[2]


_M = TypeVar("_M", bound="_ConfusionMetric")


class _ConfusionMetric(StatefulNumeric):
    """Shared constructor, naming and update of the confusion-count metrics."""

    input_type = ConfusionStatsInput
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
        """One score column, positive when `score > threshold`."""
        return cls(threshold=threshold)

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

    def _ratio(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:  # pragma: no cover
        raise NotImplementedError

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its value in percent as a device tensor."""
        data = adapt(item, ConfusionStatsInput)
        counts = _counts(data, self.rule, self.class_reduction, type(self).__name__)
        ratio = self._ratio(*counts)
        if self.class_reduction is ClassReduction.MACRO:
            ratio = ratio.nanmean()
        return self.state.update(ratio * 100.0, data.batch_size, skip_undefined=True)


class PrecisionMetric(_ConfusionMetric):
    """Precision `tp / (tp + fp)` in percent.

    Example:
        >>> PrecisionMetric.multiclass(top_k=1, class_reduction="micro").name
        'Precision @ TopK(1) [Micro]'
    """

    _title = "Precision"

    def _ratio(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        return true_pos / predicted_pos


class RecallMetric(_ConfusionMetric):
    """Recall `tp / (tp + fn)` in percent (same constructors as `PrecisionMetric`)."""

    _title = "Recall"

    def _ratio(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        return true_pos / pos


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
        """One score column, positive when `score > threshold`."""
        return cls(beta, threshold=threshold)

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

    def _ratio(
        self, true_pos: torch.Tensor, predicted_pos: torch.Tensor, pos: torch.Tensor
    ) -> torch.Tensor:
        # (1 + b²) tp / ((1 + b²) tp + b² fn + fp), with fn = pos - tp and fp = pred - tp
        beta_sq = self.beta**2
        return (1.0 + beta_sq) * true_pos / (beta_sq * pos + predicted_pos)

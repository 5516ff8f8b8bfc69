"""The shared part of the rank-based metrics (AUROC, AUC-PR): one value per epoch.

Their value depends on the order of every score of the epoch, so there is no batch value and
no running total (Burn logs "N/A" per batch and one value per epoch). They keep every score in
a `PredictionAccumulator` and are `computed_per_epoch`: the processor logs `epoch_entry()` once
at the epoch's end — over every rank's items under `torch.distributed` — and shows `value()`,
this process's value so far, on the dashboard.

Each task is a One-vs-Rest decomposition into score columns (Burn's):

- `binary()`: one score column `[n, 1]` and its bool truth;
- `multiclass(class_reduction)`: `[n, C]` scores and one-hot truth;
- `multilabel(class_reduction)`: `[n, C]` scores and multi-label truth.

`MACRO` averages the columns' values, leaving out a column where the value is undefined (no
positive, or for AUROC no negative either); `MICRO` flattens the columns into one; `WEIGHTED`
(scikit-learn's, not in Burn) weighs each column by its positives. An epoch where no column
is defined is reported as 50 % (Burn's chance-level fallback). A NaN score makes its column's
value NaN, and so the epoch value NaN (a diverged model is reported, not averaged away).
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from burnish.train.metric.accumulator import PredictionAccumulator
from burnish.train.metric.base import MetricMetadata, Numeric, NumericEntry, adapt
from burnish.train.metric.classification import (
    ClassReduction,
    ConfusionStatsInput,
    _class_reduction,
)
from burnish.train.metric.state import accumulate_dtype

__all__ = ["RankMetric"]

_R = TypeVar("_R", bound="RankMetric")
_UNDEFINED_VALUE = 0.5  # Burn's value when no column has a defined value


class RankMetric(Numeric):
    """A metric of the ranks of all the epoch's scores, per column, then class-reduced."""

    input_type = ConfusionStatsInput
    computed_per_epoch = True
    higher_is_better = True
    unit = "%"
    _title = ""

    def __init__(self, class_reduction: ClassReduction | str = ClassReduction.MACRO) -> None:
        self.class_reduction = _class_reduction(class_reduction)
        self.name = f"{self._title} [{self.class_reduction.name.title()}]"
        self.state = PredictionAccumulator()
        self.binary_column = False
        self.items = 0  # this rank's items this epoch (a host int)
        self._shown: torch.Tensor | None = None  # `value()`'s last computation, and its items
        self._shown_items = 0

    @classmethod
    def binary(cls: type[_R]) -> _R:
        """One score column `[batch_size, 1]` and its truth (0/1 or bool)."""
        metric = cls()
        metric.binary_column = True
        return metric

    @classmethod
    def multiclass(cls: type[_R], class_reduction: ClassReduction | str = "macro") -> _R:
        """Scores `[batch_size, C]` and one-hot truth, one column per class."""
        return cls(class_reduction)

    @classmethod
    def multilabel(cls: type[_R], class_reduction: ClassReduction | str = "macro") -> _R:
        """Scores `[batch_size, C]` and multi-label truth, one column per label."""
        return cls(class_reduction)

    def columns(
        self, scores: torch.Tensor, truth: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:  # pragma: no cover
        """Each column's value in [0, 1] and whether it is defined (`[C]` each)."""
        raise NotImplementedError

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> None:
        """Keep the batch's scores and truth on their device; returns None (no batch value)."""
        data = adapt(item, ConfusionStatsInput)
        scores, truth = data.predictions, data.targets
        kind = type(self).__name__
        if scores.ndim != 2 or truth.shape != scores.shape:
            raise ValueError(
                f"{kind} expects predictions and targets of the same shape [batch_size, "
                f"num_classes]. Received: predictions {list(scores.shape)}, targets "
                f"{list(truth.shape)}. One-hot encode multiclass targets."
            )
        if self.binary_column and scores.shape[1] != 1:
            raise ValueError(
                f"{kind}.binary expects one score column [batch_size, 1]. Received: "
                f"predictions {list(scores.shape)}. Use {kind}.multiclass(...) for one column "
                "per class (two-class logits included)."
            )
        self.state.align(scores.device)
        self.state.accumulate(scores, truth)
        self.items += data.batch_size

    def value(self) -> torch.Tensor:
        """This process's value over its items so far, in percent (NaN before any), for the
        dashboard: recomputed once the items grew by a tenth since the last computation, so
        showing it costs about ten epoch-end computations per epoch, not one per render."""
        if self._shown is None or self.items > self._shown_items * 1.1:
            self._shown = self.compute(*self.state.tensors())
            self._shown_items = self.items
        return self._shown

    def epoch_entry(self) -> NumericEntry:
        """The epoch's value over every rank's items and this rank's item count (a collective
        under `torch.distributed`: every rank calls it at the same point)."""
        return NumericEntry(self.compute(*self.state.gathered()), self.items)

    def compute(self, scores: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
        """The value in percent of `[n, C]` scores and truth: a 0-dim float64 tensor, NaN
        for no item. No host sync."""
        dtype = accumulate_dtype(scores.device)
        if scores.shape[0] == 0:
            return torch.tensor(float("nan"), dtype=dtype, device=scores.device)
        scores, truth = scores.to(dtype), truth.bool()
        if self.class_reduction is ClassReduction.MICRO:
            scores, truth = scores.reshape(-1, 1), truth.reshape(-1, 1)
        values, defined = self.columns(scores, truth)
        weight = defined.to(dtype)
        if self.class_reduction is ClassReduction.WEIGHTED:
            weight = weight * truth.sum(dim=0).to(dtype)
        total = (torch.where(defined, values, 0.0) * weight).sum()
        weights = weight.sum()
        mean = total / torch.where(weights > 0, weights, 1.0)
        return torch.where(weights > 0, mean, _UNDEFINED_VALUE) * 100.0

    def clear(self) -> None:
        """Free the epoch's scores."""
        self.state.reset()
        self.items = 0
        self._shown = None

    def gather_for_record(self) -> None:
        """Collective before a checkpoint: rank 0's record gets every rank's items."""
        self.state.gather_for_record()

    def to_record(self) -> dict[str, Any]:
        """The epoch's scores and truth (exact bytes) and this rank's item count."""
        return {**self.state.to_record(), "items": self.items}

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore `to_record()`; under ranks rank 0 takes every rank's items."""
        self.state.load_record(record, self.name)
        self.items = int(record.get("items", 0)) if len(self.state) else 0
        self._shown = None


def tie_groups(sorted_scores: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For scores sorted along dim 0: each position's first and last index among its equals."""
    n = sorted_scores.shape[0]
    index = torch.arange(n, device=sorted_scores.device).unsqueeze(1).expand_as(sorted_scores)
    differs = sorted_scores[1:] != sorted_scores[:-1]
    edge = torch.ones_like(sorted_scores[:1], dtype=torch.bool)
    starts = torch.cat((edge, differs))
    ends = torch.cat((differs, edge))
    first = torch.where(starts, index, 0).cummax(dim=0).values
    last = torch.where(ends, index, n).flip(0).cummin(dim=0).values.flip(0)
    return first, last

"""Accuracy and top-k accuracy (Burn's `AccuracyMetric`, `TopKAccuracyMetric`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.ranking import target_in_top_k
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype

__all__ = ["AccuracyInput", "AccuracyMetric", "TopKAccuracyInput", "TopKAccuracyMetric"]


@dataclasses.dataclass
class AccuracyInput:
    """Input of `AccuracyMetric`.

    Attributes:
        outputs: scores (logits or probabilities), shape `[batch_size, num_classes]`.
        targets: class indices, shape `[batch_size]`.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `outputs`)."""
        return self.outputs.shape[0]


@dataclasses.dataclass
class TopKAccuracyInput:
    """Input of `TopKAccuracyMetric` (same fields as `AccuracyInput`)."""

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `outputs`)."""
        return self.outputs.shape[0]


def _check_shapes(metric: str, outputs: torch.Tensor, targets: torch.Tensor) -> None:
    if outputs.ndim != 2 or targets.shape != outputs.shape[:1]:
        raise ValueError(
            f"{metric} expects outputs [batch_size, num_classes] and targets [batch_size]. "
            f"Received: outputs {list(outputs.shape)}, targets {list(targets.shape)}. "
            "Flatten sequence dimensions into the batch dimension first."
        )
    if outputs.shape[1] == 1:
        raise ValueError(
            f"{metric} ranks classes with argmax: one score column [batch_size, 1] would always "
            "predict class 0. Give it a score per class (two columns for a binary task, e.g. "
            "`torch.cat([-logit, logit], dim=1)`), or measure a one-column binary output with "
            "PrecisionMetric.binary / RecallMetric.binary."
        )


class _PaddedAccuracy(StatefulNumeric):
    """Shared by both accuracies: percent of hits among non-padding targets."""

    higher_is_better = True
    unit = "%"

    def __init__(self, pad_token: int | None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, index: int) -> _PaddedAccuracy:
        """Ignore targets equal to `index` (Burn's builder method); returns a new metric."""
        return self._replace(pad_token=index)

    def _accumulate(self, hits: torch.Tensor, targets: torch.Tensor) -> NumericEntry:
        """`hits`: bool [batch_size], whether each target was predicted."""
        batch_size = targets.shape[0]
        if self.pad_token is None:
            return self.state.update(hits.float().mean() * 100.0, batch_size)
        # Weight by the non-pad targets, so an all-padding batch adds nothing (not NaN).
        keep = targets != self.pad_token
        hits_total = (hits & keep).sum().to(accumulate_dtype(hits.device))  # exact counts
        value = self.state.add(hits_total * 100.0, keep.sum())
        return NumericEntry(value, batch_size)


class AccuracyMetric(_PaddedAccuracy):
    """Percent of items whose highest score is the target class.

    Epoch value: hits / items over the whole epoch, in [0, 100] (epoch-wide, which Burn's
    batch-size-weighted mean equals). The predicted class is `argmax`'s: ties go to the first
    class, and a NaN score counts as the highest (as in `torch.argmax`), so non-finite scores
    never take the value out of its range.

    With `pad_token`, targets equal to it are left out of both hits and count: the epoch
    value is hits / non-pad targets over the whole epoch, and a batch that is all padding adds
    nothing (its own entry is NaN). An epoch of padding only has no value (NaN).

    Example:
        >>> metric = AccuracyMetric()
        >>> metric.name
        'Accuracy'
    """

    input_type = AccuracyInput

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__(pad_token)
        self.name = "Accuracy"

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its accuracy in percent as a device tensor."""
        data = adapt(item, AccuracyInput)
        _check_shapes("AccuracyMetric", data.outputs, data.targets)
        hits = data.outputs.argmax(dim=1) == data.targets
        return self._accumulate(hits, data.targets)


class TopKAccuracyMetric(_PaddedAccuracy):
    """Percent of items whose target is among the `k` highest scores.

    Epoch value: hits / items (hits / non-pad targets with `pad_token`) over the whole epoch,
    in [0, 100], as `AccuracyMetric`. Classes are ranked as `torch.argmax` ranks them (ties by
    class index, NaN highest), so `TopKAccuracyMetric(1)` equals `AccuracyMetric` on tied
    scores too (`torch.topk` leaves the order of ties unspecified).

    Args:
        k: how many of the best classes count as a hit; `k=1` is `AccuracyMetric`.
        pad_token: targets equal to it are ignored.

    Raises:
        ValueError: if `k < 1`.
    """

    input_type = TopKAccuracyInput

    def __init__(self, k: int, pad_token: int | None = None) -> None:
        if k < 1:
            raise ValueError(f"`k` must be >= 1. Received: k={k}.")
        super().__init__(pad_token)
        self.k = k
        self.name = f"Top-K Accuracy @ TopK({k})"

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its top-k accuracy in percent as a device tensor."""
        data = adapt(item, TopKAccuracyInput)
        _check_shapes("TopKAccuracyMetric", data.outputs, data.targets)
        num_classes = data.outputs.shape[1]
        if self.k > num_classes:
            raise ValueError(
                f"TopKAccuracyMetric k={self.k} exceeds the number of classes. "
                f"Received: outputs with {num_classes} classes. Use k <= {num_classes}."
            )
        hits = target_in_top_k(data.outputs, data.targets, self.k)
        return self._accumulate(hits, data.targets)

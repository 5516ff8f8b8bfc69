"""Area under the ROC curve for binary classification (Burn's `AurocMetric`)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric

__all__ = ["AurocInput", "AurocMetric"]


@dataclasses.dataclass
class AurocInput:
    """Input of `AurocMetric`.

    Attributes:
        outputs: logits of the two classes, shape `[batch_size, 2]`.
        targets: 0 (negative) or 1 (positive), shape `[batch_size]`.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `outputs`)."""
        return self.outputs.shape[0]


def binary_auroc(scores: torch.Tensor, positive: torch.Tensor) -> torch.Tensor:
    """AUROC = P(score of a positive > score of a negative) + ½ P(tie), in O(n log n).

    Args:
        scores: shape `[n]`.
        positive: bool, shape `[n]`.

    Returns:
        A 0-dim float64 tensor in [0, 1]; NaN if all items are of one class or a score is
        NaN. No host sync.
    """
    negative_scores = torch.where(positive, math.inf, scores.double()).sort().values
    scores = scores.double()
    below = torch.searchsorted(negative_scores, scores, right=False)
    at_or_below = torch.searchsorted(negative_scores, scores, right=True)
    weight = positive.double()
    correct = (below.double() * weight).sum()
    tied = ((at_or_below - below).double() * weight).sum()
    num_pos = weight.sum()
    num_pairs = num_pos * (scores.shape[0] - num_pos)
    auroc = (correct + 0.5 * tied) / num_pairs
    # A NaN score has no rank (`searchsorted` would place it past every negative).
    return torch.where(scores.isnan().any(), math.nan, auroc)


class AurocMetric(StatefulNumeric):
    """AUROC in percent of the positive class's softmax probability (binary only).

    Epoch value: Burn 0.21's batch metric — each batch's AUROC, averaged over the epoch
    weighted by batch size — in [0, 100]. A batch whose targets are all of one class has no
    AUROC: it is left out (weight 0; its own entry is NaN), so an epoch of such batches only
    has no value (NaN). Burn 0.21 counted such a batch as 0 with a warning.

    A NaN score (or an infinite logit, whose softmax is NaN) makes its batch's AUROC NaN, and
    so the epoch value NaN: a diverged model is reported, not hidden.

    This is not the AUROC of the epoch's items pooled, which Burn 0.22's `AurocMetric` and
    `TorchMetric(BinaryAUROC())` compute (they keep every score of the epoch until its end).
    """

    input_type = AurocInput
    higher_is_better = True
    unit = "%"

    def __init__(self) -> None:
        super().__init__()
        self.name = "AUROC"

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its AUROC in percent as a device tensor."""
        data = adapt(item, AurocInput)
        outputs, targets = data.outputs, data.targets
        if outputs.ndim != 2 or outputs.shape[1] != 2 or targets.shape != outputs.shape[:1]:
            raise ValueError(
                "AurocMetric supports binary classification only: outputs [batch_size, 2] and "
                f"targets [batch_size]. Received: outputs {list(outputs.shape)}, targets "
                f"{list(targets.shape)}."
            )
        positive = targets == 1
        auroc = binary_auroc(outputs.softmax(dim=1)[:, 1], positive)
        # Defined when both classes occur: decided by the targets alone, so a NaN score still
        # reaches the epoch value while a single-class batch weighs 0.
        num_pos = positive.sum()
        defined = (num_pos > 0) & (num_pos < data.batch_size)
        weight = defined.to(auroc.dtype) * data.batch_size
        self.state.add(torch.where(defined, auroc * 100.0, 0.0) * weight, weight)
        return NumericEntry(auroc * 100.0, data.batch_size)

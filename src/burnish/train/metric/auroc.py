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
        scores: shape `[n]`, finite.
        positive: bool, shape `[n]`.

    Returns:
        A 0-dim float64 tensor; NaN if all items are of one class. No host sync.
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
    return (correct + 0.5 * tied) / num_pairs


class AurocMetric(StatefulNumeric):
    """AUROC in percent of the positive class's softmax probability (binary only).

    Computed per batch (Burn's semantics) and averaged over the epoch weighted by batch size.
    A batch with a single class has no AUROC: it is left out of the epoch value (Burn counts
    it as 0 with a warning).
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
        probabilities = outputs.softmax(dim=1)[:, 1]
        auroc = binary_auroc(probabilities, targets == 1)
        return self.state.update(auroc * 100.0, data.batch_size, skip_undefined=True)

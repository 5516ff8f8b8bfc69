"""Hamming score for multi-label classification (Burn's `HammingScore`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric

__all__ = ["HammingScore", "HammingScoreInput"]


@dataclasses.dataclass
class HammingScoreInput:
    """Input of `HammingScore`.

    Attributes:
        outputs: scores, shape `[batch_size, num_labels]`.
        targets: 0/1 labels of the same shape.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `outputs`)."""
        return self.outputs.shape[0]


class HammingScore(StatefulNumeric):
    """Percent of labels predicted right: `mean((score > threshold) == target)`.

    It is `100 * (1 - hamming_loss)`.

    Args:
        threshold: a label is predicted when its score is above it (compared in the scores'
            dtype, as torch compares a tensor with a number).
        sigmoid: apply a sigmoid to the outputs first (for logits).
    """

    input_type = HammingScoreInput
    higher_is_better = True
    unit = "%"

    def __init__(self, threshold: float = 0.5, sigmoid: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.sigmoid = sigmoid
        self.name = f"Hamming Score @ Threshold({threshold})"

    def with_threshold(self, threshold: float) -> HammingScore:
        """Burn's builder method; returns a new metric."""
        return self._replace(threshold=threshold, name=f"Hamming Score @ Threshold({threshold})")

    def with_sigmoid(self, sigmoid: bool) -> HammingScore:
        """Burn's builder method; returns a new metric."""
        return self._replace(sigmoid=sigmoid)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its Hamming score in percent as a device tensor."""
        data = adapt(item, HammingScoreInput)
        if data.outputs.ndim != 2 or data.targets.shape != data.outputs.shape:
            raise ValueError(
                "HammingScore expects outputs and targets of shape [batch_size, num_labels]. "
                f"Received: outputs {list(data.outputs.shape)}, targets "
                f"{list(data.targets.shape)}."
            )
        outputs = data.outputs.sigmoid() if self.sigmoid else data.outputs
        right = (outputs > self.threshold) == data.targets.bool()
        return self.state.update(right.float().mean() * 100.0, data.batch_size)

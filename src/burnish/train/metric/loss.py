"""The loss metric (Burn's `LossMetric`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric

__all__ = ["LossInput", "LossMetric"]


@dataclasses.dataclass
class LossInput:
    """Input of `LossMetric`.

    Attributes:
        loss: the batch loss, 0-dim (mean-reduced) or per item (`reduction="none"`).
        batch_size: the items the loss covers; None means one per element of `loss`.
    """

    loss: torch.Tensor
    batch_size: int | None = None

    def __post_init__(self) -> None:
        if self.batch_size is None:
            self.batch_size = max(self.loss.numel(), 1)


class LossMetric(StatefulNumeric):
    """The mean of the loss over the epoch, weighted by batch size.

    Unlike Burn (one weight per iteration), the weight is the batch size, so the epoch value is
    the loss averaged over items even when the last batch is smaller.

    Example:
        >>> metric = LossMetric()
        >>> entry = metric.update(LossInput(torch.tensor(0.5), batch_size=8), None)
        >>> float(metric.value())
        0.5
    """

    input_type = LossInput
    higher_is_better = False

    def __init__(self) -> None:
        super().__init__()
        self.name = "Loss"

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its mean loss as a device tensor."""
        data = adapt(item, LossInput)
        assert data.batch_size is not None  # set by LossInput.__post_init__
        loss = data.loss
        return self.state.update(loss if loss.dim() == 0 else loss.mean(), data.batch_size)

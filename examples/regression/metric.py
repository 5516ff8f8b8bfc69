"""A user-defined metric: mean absolute error (the Burn book's exercise), written against the
public `Metric`/`Numeric` protocol only."""

from __future__ import annotations

from typing import Any

import torch

from burnish.train import RegressionOutput
from burnish.train.metric import MetricMetadata, Numeric, NumericEntry, adapt


class MeanAbsoluteError(Numeric):
    """Mean of |output - target| over the epoch's items, kept on the device.

    Its input is `RegressionOutput` itself: `adapt` hands the step's output over unchanged.
    """

    input_type = RegressionOutput
    higher_is_better = False
    precision = 3

    def __init__(self, scale: float = 1.0) -> None:
        self.name = "MeanAbsoluteError"
        self.scale = scale  # report in the target's original unit
        self.clear()

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        output = adapt(item, RegressionOutput)
        errors = (output.output - output.targets).abs() * self.scale
        self.total = self.total + errors.sum()  # device tensors: no sync
        self.count += errors.numel()
        return NumericEntry(errors.mean(), errors.numel())

    def value(self) -> torch.Tensor:
        return torch.as_tensor(self.total, dtype=torch.float64) / max(self.count, 1)

    def clear(self) -> None:
        self.total: torch.Tensor | float = 0.0
        self.count = 0

    def to_record(self) -> dict[str, Any]:
        return {"total": torch.as_tensor(self.total, dtype=torch.float64), "count": self.count}

    def load_record(self, record: dict[str, Any]) -> None:
        self.total, self.count = record["total"], record["count"]

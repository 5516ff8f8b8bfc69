"""Dice-Sørensen coefficient (Burn main's `DiceMetric`, `burn::train::metric::vision`).

`DSC = (2 |X ∩ Y| + epsilon) / (|X| + |Y| + epsilon)` of 0/1 masks `[B, C, ...]` (one-hot,
class 0 the background, left out unless `include_background`), pooled over the classes and
items. The epoch value pools the epoch: the intersection and the two mask sizes are summed over
every batch before the ratio (Burn averages the batch ratios and leaves pooling as a TODO;
torchmetrics' `DiceScore(average="micro", aggregation_level="global")` pools). Two empty masks
score 1.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype
from burnish.train.metric.vision.images import ImagePairs

__all__ = ["DiceInput", "DiceMetric", "DiceMetricConfig"]


class DiceInput(ImagePairs):
    """Input of `DiceMetric` (`ImagePairs`): predicted and true 0/1 masks `[B, C, ...]`, at
    least 3 dimensions, classes one-hot."""


@dataclasses.dataclass(frozen=True)
class DiceMetricConfig:
    """Configuration of `DiceMetric` (Burn: `DiceMetricConfig`).

    Attributes:
        epsilon: added to both sides of the ratio (1e-7).
        include_background: count class 0 too (needs at least 2 classes).
    """

    epsilon: float = 1e-7
    include_background: bool = False

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, (int, float)) and math.isfinite(self.epsilon)):
            raise ValueError(f"`epsilon` must be a finite number. Received: {self.epsilon!r}.")


class DiceMetric(StatefulNumeric):
    """Pooled Dice coefficient over the epoch, in [0, 1] (name `{dims}D Dice Metric`).

    Args:
        config: a `DiceMetricConfig` (None: the defaults).
        dims: the number of dimensions of the masks (Burn's `D`, default 4: `[B, C, H, W]`).

    Raises:
        ValueError: if `dims < 3`.
    """

    input_type = DiceInput
    higher_is_better = True
    precision = 4

    def __init__(self, config: DiceMetricConfig | None = None, dims: int = 4) -> None:
        super().__init__()
        if not isinstance(dims, int) or dims < 3:
            raise ValueError(
                f"DiceMetric needs masks of at least 3 dimensions [B, C, ...]. Received: "
                f"dims={dims!r}."
            )
        self.config = DiceMetricConfig() if config is None else config
        self.dims = dims
        self.name = f"{dims}D Dice Metric"

    @classmethod
    def with_config(cls, config: DiceMetricConfig, dims: int = 4) -> DiceMetric:
        """Burn's constructor with a config."""
        return cls(config, dims)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's intersection and mask sizes; returns the batch's Dice (a tensor)."""
        data = adapt(item, DiceInput)
        outputs, targets = data.outputs, data.targets
        if outputs.ndim != self.dims or outputs.shape != targets.shape:
            raise ValueError(
                f"{self.name} expects outputs and targets of one shape with {self.dims} "
                f"dimensions [B, C, ...]. Received: outputs {list(outputs.shape)}, targets "
                f"{list(targets.shape)}. Use DiceMetric(dims={outputs.ndim}) for other masks."
            )
        classes = outputs.shape[1]
        if self.config.include_background and classes < 2:
            raise ValueError(
                f"{self.name} with include_background=True needs at least 2 classes (class "
                f"0 is the background). Received: {classes} class. Set include_background="
                "False, or one-hot encode the background as class 0."
            )
        if not self.config.include_background and classes > 1:
            outputs, targets = outputs[:, 1:], targets[:, 1:]
        dtype = accumulate_dtype(outputs.device)
        outputs, targets = outputs.to(dtype), targets.to(dtype)
        totals = torch.stack(((outputs * targets).sum(), outputs.sum(), targets.sum()))
        self.state.add(totals, data.batch_size)
        return NumericEntry(self.dice(totals), data.batch_size)

    def value(self) -> torch.Tensor:
        """Dice of the epoch's summed intersection and mask sizes; NaN before any batch."""
        totals = self.state.sum
        if not isinstance(totals, torch.Tensor) or totals.dim() == 0:
            return torch.tensor(math.nan, dtype=torch.float64)
        return self.dice(totals)

    def dice(self, totals: torch.Tensor) -> torch.Tensor:
        """`(2 I + eps) / (|X| + |Y| + eps)` of `[intersection, |X|, |Y|]`."""
        intersection, predicted, true = totals.unbind(0)
        epsilon = self.config.epsilon
        return (2.0 * intersection + epsilon) / (predicted + true + epsilon)

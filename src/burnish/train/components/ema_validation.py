"""Validation under `with_ema`: on the averaged weights, on the trained ones, or on both.

With `validate="both"` each validation batch runs through both models. The split's metrics
get the EMA model's output, as with `"ema"`; each numeric validation metric also has a twin
named `Raw <name>` (`Raw Accuracy`, `Raw Loss`) that gets the trained model's output, logged
as `valid/epoch-N/Raw_<name>.log` beside the metric and shown beside it in the dashboard and
the summary. Strategies and early stopping may watch either.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from burnish.train.metric.base import Metric, MetricMetadata, Numeric, NumericEntry

__all__ = ["RAW_PREFIX", "EmaValidation", "RawModelMetric", "WithRawModel", "raw_model_twins"]

RAW_PREFIX = "Raw "


class EmaValidation:
    """`valid_step` on the EMA weights, paired with the trained model's when `raw` is given.

    Args:
        ema: the EMA model's inference twin.
        raw: the trained model's inference twin (`validate="both"`), or None.
    """

    def __init__(self, ema: nn.Module, raw: nn.Module | None = None) -> None:
        self.ema = ema
        self.raw = raw

    @property
    def modules(self) -> list[nn.Module]:
        """The models validation runs (compiled alike under `compile()`)."""
        return [self.ema] if self.raw is None else [self.ema, self.raw]

    def valid_step(self, batch: Any) -> Any:
        """The EMA model's output, or both outputs as a `WithRawModel`."""
        item = self.ema.valid_step(batch)  # type: ignore[operator]
        if self.raw is None:
            return item
        return WithRawModel(item, self.raw.valid_step(batch))  # type: ignore[operator]


@dataclasses.dataclass
class WithRawModel:
    """A validation output of the EMA model with the trained model's for the same batch.

    It feeds every metric as the EMA model's output does (`adapt`, attributes); the `Raw`
    twins take `raw`.
    """

    item: Any
    raw: Any

    def adapt(self, input_type: type[Any]) -> Any:
        """The EMA output's input for a metric."""
        if isinstance(self.item, input_type):
            return self.item
        method = getattr(self.item, "adapt", None)
        return method(input_type) if callable(method) else NotImplemented

    def __getattr__(self, name: str) -> Any:
        if name in ("item", "raw") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.item, name)


class RawModelMetric(Numeric):
    """A numeric validation metric computed on the trained weights (`Raw <name>`).

    Args:
        metric: a fresh copy of the metric it twins.
    """

    def __init__(self, metric: Numeric) -> None:
        self.metric = metric
        self.name = RAW_PREFIX + metric.name
        self.input_type = metric.input_type
        self.higher_is_better = metric.higher_is_better
        self.unit = metric.unit
        self.precision = metric.precision
        self.computed_per_epoch = metric.computed_per_epoch

    def update(self, item: Any, metadata: MetricMetadata) -> Any:
        """Update the twinned metric with the trained model's output."""
        return self.metric.update(item.raw if isinstance(item, WithRawModel) else item, metadata)

    def value(self) -> torch.Tensor:
        """The twinned metric's epoch value so far."""
        return self.metric.value()

    def epoch_entry(self) -> NumericEntry:
        """The twinned metric's epoch entry (metrics computed per epoch)."""
        return self.metric.epoch_entry()

    def format(self, current: float, running: float) -> str:
        """As the twinned metric shows itself."""
        return self.metric.format(current, running)

    def clear(self) -> None:
        """Forget the epoch."""
        self.metric.clear()

    def to_record(self) -> dict[str, Any]:
        """The twinned metric's mid-epoch state."""
        return self.metric.to_record()

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the twinned metric's state."""
        self.metric.load_record(record)

    @property
    def state(self) -> Any:
        """The twinned metric's state (summed over ranks like any metric's)."""
        return self.metric.state  # type: ignore[attr-defined]  # AttributeError: none

    @state.setter
    def state(self, value: Any) -> None:
        self.metric.state = value  # type: ignore[attr-defined]


def raw_model_twins(metrics: Sequence[Metric]) -> list[RawModelMetric]:
    """A `Raw <name>` twin of each numeric metric (fresh copies: no shared state)."""
    return [RawModelMetric(copy.deepcopy(m)) for m in metrics if isinstance(m, Numeric)]

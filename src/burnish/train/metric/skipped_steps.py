"""Optimizer steps skipped for non-finite gradients (`on_non_finite("skip")`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, Numeric, NumericEntry

__all__ = ["SkippedStepsMetric"]

StepFlag = Callable[[], "torch.Tensor | None"]


class SkippedStepsMetric(Numeric):
    """How many optimizer steps of the epoch were skipped because a gradient was inf or NaN.

    The learner registers it on the train split with `on_non_finite("skip")` and feeds it
    each iteration's device flag (1.0 for a skipped step, 0.0 for a step taken or an iteration
    that only accumulated gradients): each log line is that flag, the epoch value their sum.
    Nothing is read back to count: the flags are summed on the device. Under float16 mixed
    precision the loss scaler's skips (an overflow while the scale settles) count too.

    Args:
        source: returns this iteration's flag (a 0-dim device tensor) or None when the
            iteration made no optimizer step; set by the learner.
    """

    higher_is_better = False
    precision = 0

    def __init__(self, source: StepFlag | None = None) -> None:
        self.name = "Skipped Steps"
        self.source = source
        self._total: torch.Tensor | float = 0.0

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """This iteration's flag (1: skipped); `item` is ignored."""
        flag = self.source() if self.source is not None else None
        if flag is None:
            return NumericEntry(0.0, 1)
        self._total = self._total + flag
        return NumericEntry(flag, 1)

    def value(self) -> torch.Tensor:
        """The skipped steps of the epoch so far (no host sync)."""
        if isinstance(self._total, torch.Tensor):
            return self._total
        return torch.tensor(float(self._total), dtype=torch.float64)

    def format(self, current: float, running: float) -> str:
        """`"epoch {skipped} - batch {0|1}"`."""
        return f"epoch {running:.0f} - batch {current:.0f}"

    def clear(self) -> None:
        """Forget the epoch's count."""
        self._total = 0.0

    def to_record(self) -> dict[str, Any]:
        """`{"skipped": float}` (read back at checkpoint time)."""
        return {"skipped": float(self._total)}

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue the epoch's count."""
        self._total = float(record.get("skipped", 0.0))

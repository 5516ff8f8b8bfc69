"""A numeric metric's epoch value over several ranks.

On one process the epoch value of a numeric metric is its `value()` at the epoch's end. Under
`torch.distributed` each rank's metric saw only its shard, so the processor sums what the
ranks hold and derives the value from the sums:

- A metric whose epoch state is `self.state`, a `NumericMetricState` (every built-in metric
  with an entry per iteration): its `(state.sum, state.count)` — `sum` of any shape, e.g.
  precision's confusion counts — are summed over the ranks by `sum_over_ranks` and
  its `value()` is asked with the summed state — `sum / count` for a ratio of totals
  (accuracy, loss, CER, ...), `exp(sum / count)` for
  perplexity: exactly one process's value over all ranks' items.
- Any other numeric metric (user-defined, `IterationSpeedMetric`, host gauges): the ranks'
  `value()`s weighted by the items each rank gave it (the counts of its entries). That is
  exact for a mean over items, and on one rank it is `value()` itself.

`computed_per_epoch` metrics (`TorchMetric`, AUROC, AUC-PR) are not handled here: they reduce
themselves.
"""

from __future__ import annotations

import math
from typing import Any

from burnish.train.metric.base import Numeric
from burnish.train.metric.state import NumericMetricState

__all__ = ["epoch_totals", "numeric_state", "value_from_totals"]


def numeric_state(metric: Numeric) -> NumericMetricState | None:
    """`metric.state` if it is a `NumericMetricState` (the metric's epoch value derives from
    its sum and count), else None."""
    state = getattr(metric, "state", None)
    return state if isinstance(state, NumericMetricState) else None


def epoch_totals(metric: Numeric, items: int) -> tuple[Any, Any]:
    """What this rank adds to `metric`'s epoch value: `(sum, count)`, device tensors or floats.

    Args:
        metric: a numeric metric with an entry per iteration.
        items: the items this rank gave `metric` this epoch (used without a state).

    Returns:
        Without a state `(value() * items, items)`, or `(0.0, 0)` when the rank gave it
        nothing; with a state `(0.0, 0)`: states are summed apart (`sum_over_ranks`), their
        `sum` may hold several totals. No host sync.
    """
    if numeric_state(metric) is not None:  # summed apart: a state may hold several totals
        return 0.0, 0
    if items == 0:
        return 0.0, 0
    return metric.value() * items, items


def value_from_totals(metric: Numeric, total: Any, count: float) -> float:
    """`metric`'s epoch value from `epoch_totals` summed over the ranks.

    With a state: `value()` asked with a state holding `(total, count)` (the metric's own
    state is put back afterwards). Without: `total / count` (NaN when `count` is 0).
    """
    state = numeric_state(metric)
    if state is None:
        return total / count if count else math.nan
    summed = NumericMetricState()
    summed.load_record({"sum": total, "count": count}, metric.name)
    metric.state = summed  # type: ignore[attr-defined]  # numeric_state found one
    try:
        value = metric.value()
    finally:
        metric.state = state  # type: ignore[attr-defined]
    return float(value)  # host floats in, so a CPU tensor out: no device sync

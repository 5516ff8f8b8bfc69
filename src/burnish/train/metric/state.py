"""Shared accumulation for numeric metrics (Burn's `NumericMetricState`), on the device."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import torch

from burnish.errors import RecordError
from burnish.train.metric.base import Numeric, NumericEntry
from burnish.value_builder import ValueBuilder

__all__ = ["NumericMetricState", "StatefulNumeric", "accumulate_dtype", "sum_over_ranks"]


def accumulate_dtype(device: torch.device) -> torch.dtype:
    """float64 where the device has it (exact sums over long epochs), else float32 (MPS)."""
    return torch.float32 if device.type == "mps" else torch.float64


class NumericMetricState:
    """A running weighted sum and total weight, kept where the values live.

    Tensor values stay on their device: `update` only queues a few scalar kernels and never
    reads anything back, so the learner can read every metric of an iteration in one transfer.
    Host floats (learning rate, timings) are summed on the host.

    `sum / count` is the mean of the batch values weighted by batch size (Burn's aggregation),
    or any ratio of totals via `add`. Both are totals, so the states of several processes
    combine by adding their `sum`s and their `count`s. `count` is a scalar; `sum` is a scalar
    or, for a metric that keeps several totals (the confusion counts of `PrecisionMetric`),
    a tensor of any shape, divided elementwise by `count`.

    Example:
        >>> state = NumericMetricState()
        >>> _ = state.update(torch.tensor(50.0), 4)
        >>> _ = state.update(torch.tensor(100.0), 1)
        >>> float(state.mean())
        60.0
    """

    def __init__(self) -> None:
        self._sum: torch.Tensor | float = 0.0
        self._count: torch.Tensor | float = 0

    @property
    def sum(self) -> torch.Tensor | float:
        """The weighted sum of the values so far."""
        return self._sum

    @property
    def count(self) -> torch.Tensor | float:
        """The total weight so far (the number of items for batch-size weighting)."""
        return self._count

    def reset(self) -> None:
        """Forget everything (end of epoch)."""
        self._sum = 0.0
        self._count = 0

    def update(
        self,
        value: torch.Tensor | float,
        batch_size: int,
        skip_undefined: bool = False,
    ) -> NumericEntry:
        """Add a batch value weighted by `batch_size`.

        Args:
            value: the batch's value, a 0-dim (or one-element) tensor or a float.
            batch_size: the items the value covers; its weight in the epoch mean.
            skip_undefined: leave a NaN batch value (e.g. precision with no predicted
                positive) out of the epoch mean instead of making it NaN.

        Returns:
            The iteration's `NumericEntry(value, batch_size)`. A batch of no item adds
            nothing (its value, NaN for most metrics, is not weighted by 0).
        """
        if isinstance(batch_size, int) and batch_size == 0:
            return NumericEntry(value, 0)
        if not isinstance(value, torch.Tensor):
            value = float(value)
            if not (skip_undefined and math.isnan(value)):
                self._sum = self._sum + value * batch_size
                self._count = self._count + batch_size
            return NumericEntry(value, batch_size)
        value = value.detach().reshape(())
        if not skip_undefined and isinstance(self._sum, torch.Tensor) and type(batch_size) is int:
            # One kernel for `sum + value * batch_size` in the sum's dtype (float64): for float32
            # and half values the product is exact there, so the result is the two-step one.
            self._sum = torch.add(self._sum, value, alpha=batch_size)
            self._count = self._count + batch_size
            return NumericEntry(value, batch_size)
        weighted = value.to(accumulate_dtype(value.device)) * batch_size
        weight: torch.Tensor | int = batch_size
        if skip_undefined:
            defined = ~torch.isnan(weighted)
            weighted = torch.where(defined, weighted, 0.0)
            weight = defined.to(weighted.dtype) * batch_size
        self._add(weighted, weight)
        return NumericEntry(value, batch_size)

    def add(self, total: torch.Tensor, weight: torch.Tensor | int) -> torch.Tensor:
        """Add a total and its weight directly, e.g. correct predictions and non-pad targets.

        Args:
            total: the batch's contribution to the sum: a 0-dim tensor, or a tensor of the
                same shape at every call for a state of several totals.
            weight: the batch's contribution to the count (0-dim tensor or int).

        Returns:
            The batch value `total / weight` (NaN for a zero weight; the epoch is unaffected).
        """
        dtype = accumulate_dtype(total.device)
        total = total.detach().to(dtype)
        if isinstance(weight, torch.Tensor):
            weight = weight.detach().reshape(()).to(dtype)
        self._add(total, weight)
        return total / weight

    def _add(self, total: torch.Tensor, weight: torch.Tensor | int) -> None:
        if isinstance(self._sum, torch.Tensor) and self._sum.device != total.device:
            self._sum = self._sum.to(total.device)  # totals restored from a record (CPU)
        self._sum = self._sum + total
        self._count = self._count + weight

    def mean(self) -> torch.Tensor:
        """`sum / count` as a 0-dim tensor (NaN before any update); no host sync."""
        if isinstance(self._sum, torch.Tensor) or isinstance(self._count, torch.Tensor):
            return cast(torch.Tensor, self._sum / self._count)
        return torch.tensor(
            self._sum / self._count if self._count else math.nan, dtype=torch.float64
        )

    def to_record(self) -> dict[str, Any]:
        """`{"sum": float, "count": float}` (`sum` a nested list of floats for several totals);
        reads the state back (checkpoint time only)."""
        total = self._sum
        if isinstance(total, torch.Tensor) and total.dim() > 0:
            return {"sum": total.double().tolist(), "count": float(self._count)}
        return {"sum": float(total), "count": float(self._count)}

    def load_record(self, record: dict[str, Any], owner: str = "metric") -> None:
        """Restore a `to_record()` state.

        Raises:
            RecordError: if `record` lacks `sum` or `count`.
        """
        if not isinstance(record, dict) or not {"sum", "count"} <= set(record):
            received = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise RecordError(
                f"The record of {owner!r} must have `sum` and `count`. Received: {received}. "
                "Load a record produced by that metric's `to_record()`."
            )
        total = record["sum"]
        if isinstance(total, (list, torch.Tensor)):  # several totals, kept on the host until
            self._sum = torch.as_tensor(total, dtype=torch.float64)  # the next update moves them
        else:
            self._sum = float(total)
        self._count = float(record["count"])


class StatefulNumeric(ValueBuilder, Numeric):
    """A numeric metric whose epoch value is `self.finish(self.state.mean())`.

    Subclasses compute a batch value in `update` and return `self.state.update(value, n)` (or
    add totals with `self.state.add`); `value`, `clear`, `to_record` and `load_record` come
    from the shared state. The epoch's whole state is `self.state`: the states of several
    processes combine by adding their `sum`s and `count`s, and `finish(sum / count)` of the
    combined totals is the epoch value over all processes' items.

    A metric's `with_*` methods (Burn's builder methods) return a new metric and leave this one
    as it was; the new one's state is a copy of this one's (empty on a fresh metric), never
    shared with it.
    """

    _copies_state = True

    def __init__(self) -> None:
        self.state = NumericMetricState()

    def finish(self, mean: torch.Tensor) -> torch.Tensor:
        """The epoch value from the state's totals: `mean` is `state.sum / state.count`.

        The identity by default (the epoch value is the ratio of totals itself); a metric whose
        value is a function of its totals overrides it: perplexity is `exp(mean)`, precision
        the ratio of its confusion counts. Called on the totals summed over all processes, too.

        Args:
            mean: `state.sum / state.count`, a float64 tensor of `state.sum`'s shape (NaN when
                the count is 0).

        Returns:
            The epoch value, a 0-dim tensor (NaN when it is undefined).
        """
        return mean

    def value(self) -> torch.Tensor:
        """The epoch value so far: `finish(state.mean())` (0-dim, no host sync)."""
        return self.finish(self.state.mean())

    def clear(self) -> None:
        """Forget the epoch."""
        self.state.reset()

    def to_record(self) -> dict[str, Any]:
        """The epoch's running sum and count."""
        return self.state.to_record()

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the running sum and count."""
        self.state.load_record(record, self.name)


_MAX_DIMS = 4  # of a state's `sum` (the confusion counts have 2)


def sum_over_ranks(
    states: Sequence[NumericMetricState], reduce: Callable[[torch.Tensor], torch.Tensor]
) -> list[dict[str, Any]]:
    """The states summed over the ranks, as `to_record()`s: `{"sum": ..., "count": float}`.

    Every rank calls it with the states of the same metrics in the same order (it is a
    collective). A `sum` of any shape is summed elementwise; a rank whose state saw no update
    (`sum` 0.0) takes the shape the other ranks report. Two all-reduces (the shapes, then the
    totals) of CPU tensors and one read-back per device. Load a result into a state with
    `load_record` and ask the metric's `finish(state.mean())` for the epoch value of all ranks.

    Args:
        states: this rank's states.
        reduce: sums a CPU float64 tensor over the ranks and returns the sum.

    Raises:
        ValueError: if the ranks' shapes of one state differ.
    """
    if not states:  # the same on every rank: no collective at all
        return []
    shapes = _agreed_shapes(states, reduce)
    parts: list[torch.Tensor | float] = []
    for state, shape in zip(states, shapes):
        total = state.sum
        if shape and not (isinstance(total, torch.Tensor) and total.dim() > 0):
            total = torch.full(shape, float(total), dtype=torch.float64)  # saw no update
        parts += [total, state.count]
    summed = reduce(_host_vector(parts))
    records, start = [], 0
    for shape in shapes:
        size = math.prod(shape)
        part = summed[start : start + size]
        host_total: Any = part.reshape(shape).tolist() if shape else float(part[0])
        records.append({"sum": host_total, "count": float(summed[start + size])})
        start += size + 1
    return records


def _agreed_shapes(
    states: Sequence[NumericMetricState], reduce: Callable[[torch.Tensor], torch.Tensor]
) -> list[tuple[int, ...]]:
    """Each state's `sum` shape as the ranks that updated it report it (`()`: a scalar)."""
    rows = torch.zeros(len(states), 1 + _MAX_DIMS, dtype=torch.float64)
    own: list[tuple[int, ...]] = []
    for i, state in enumerate(states):
        total = state.sum
        shape = tuple(total.shape) if isinstance(total, torch.Tensor) else ()
        if len(shape) > _MAX_DIMS:
            raise ValueError(
                f"A metric state's `sum` may have at most {_MAX_DIMS} dimensions to be summed "
                f"over the ranks. Received: shape {list(shape)}."
            )
        own.append(shape)
        if shape:
            rows[i, 0] = 1.0
            rows[i, 1 : 1 + len(shape)] = torch.tensor(shape, dtype=torch.float64)
    rows = reduce(rows)
    agreed = []
    for row, shape in zip(rows.tolist(), own):
        ranks, dims = row[0], row[1:]
        mean = [d / ranks for d in dims] if ranks else []
        shared = tuple(int(d) for d in mean if d > 0)
        if any(d != int(d) for d in mean) or (shape and shape != shared):
            raise ValueError(
                "A metric's state has different shapes on different ranks. Received: "
                f"{list(shape)} here, a mean of {mean} over {int(ranks)} ranks. Feed every "
                "rank outputs with the same number of classes."
            )
        agreed.append(shared)
    return agreed


def _host_vector(parts: Sequence[torch.Tensor | float]) -> torch.Tensor:
    """The parts flattened into one CPU float64 vector: one copy per device."""
    flat: list[torch.Tensor] = [torch.empty(0)] * len(parts)
    by_device: dict[torch.device, list[int]] = {}
    for i, part in enumerate(parts):
        if isinstance(part, torch.Tensor):
            by_device.setdefault(part.device, []).append(i)
        else:
            flat[i] = torch.tensor([float(part)], dtype=torch.float64)
    for device, indices in by_device.items():
        wide = accumulate_dtype(device)
        pieces = [parts[i].detach().reshape(-1).to(wide) for i in indices]  # type: ignore[union-attr]
        host = torch.cat(pieces).cpu().double()
        for i, piece in zip(indices, host.split([len(p) for p in pieces])):
            flat[i] = piece
    return torch.cat(flat)

"""Items or tokens per second over an epoch, and model FLOPs utilization (MFU).

The definitions follow Composer's `SpeedMonitor` and Lightning's `ThroughputMonitor`:
throughput is the items (or tokens) trained on divided by the wall time they took, over the
whole job (all ranks), and MFU is the share of the devices' peak FLOP rate that the model's
FLOPs at that throughput represent:

    throughput = world_size * items counted / seconds counted
    MFU (%)    = 100 * (throughput / world_size) * flops_per_item / peak_flops

What is counted differs from theirs in one way: neither is over a sliding window, both are
over the epoch so far, as Burn's `IterationSpeedMetric` is.

The clock is the host's (`time.perf_counter`), read when the loop hands an iteration's output
to the metrics, i.e. once the host has queued the iteration's kernels. Nothing waits for the
device (Lightning's monitor calls `torch.cuda.synchronize()` every batch; this metric never
does), so at any instant the device may still run the last queued iterations. That lag is
bounded: the learner reads its metrics back every 32 iterations at most (and at the renderer's
pace, and at each epoch end), and each read-back waits for the work queued before it. Over an
epoch the value is the host's rate, ahead of the device's by at most the queued iterations.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, Numeric, NumericEntry
from burnish.train.metric.state import accumulate_dtype

__all__ = ["ThroughputMetric"]

Count = int | torch.Tensor


class ThroughputMetric(Numeric):
    """Items (or tokens) per second over the epoch, for the whole job; and MFU.

    The first iteration of an epoch only starts the clock (its time includes the data
    loader's start, and `torch.compile`'s first trace): each later iteration adds its items
    (or tokens) and the time since the previous one. So the value after iteration `n` is
    `world_size * (items of iterations 2..n) / (time from iteration 1 to n)`. Each log line
    is that running value (count 1), as `IterationSpeedMetric`'s; the epoch value is the last
    one. Checkpoint writes inside the epoch are counted, as part of training's wall time.

    Items are the output's `batch_size`; tokens (`tokens=True`) are its `num_tokens`: a
    `SequenceOutput` has one (`batch_size * seq_len`, padding included); give your own output
    a `num_tokens` field, a host int or a 0-dim tensor (e.g. the non-padding tokens,
    `(targets != pad).sum()`), to count them. A tensor is summed on its device and read back
    with the other metrics: never a host sync.

    With `flops_per_item` and `peak_flops`, an `MFU` metric (percent) comes with it, registered
    beside it on the same split: `100 * throughput per device * flops_per_item / peak_flops`.
    `flops_per_item` are the FLOPs of one training iteration per item (or per token with
    `tokens=True`): forward and backward, e.g. about `6 * num_parameters` per token for a
    transformer (PaLM's MFU); `peak_flops` is one device's peak rate in the dtype trained in
    (e.g. 989e12 for an H100 SXM in bf16, dense). Registered on validation, which runs only
    forward passes, give it forward FLOPs.

    Under `torch.distributed` each rank measures its own rate; the logged value is the mean
    over the ranks times the world size (the job's throughput) and MFU the mean over the
    devices. After a resume the counted items and seconds continue (the downtime is not
    counted).

    Args:
        tokens: count tokens (`num_tokens`) instead of items (`batch_size`).
        flops_per_item: FLOPs of one training iteration per item (per token with `tokens`).
        peak_flops: one device's peak FLOPs per second.
        clock: seconds, monotonic (tests inject one).

    Raises:
        ValueError: if only one of `flops_per_item` and `peak_flops` is given, or one is not
            a positive finite number.

    Example:
        >>> from burnish.train.metric import ThroughputMetric
        >>> tokens = ThroughputMetric(tokens=True, flops_per_item=6 * 124e6, peak_flops=989e12)
        >>> tokens.name, tokens.mfu.name
        ('Token Throughput', 'MFU')
    """

    higher_is_better = True
    _items: torch.Tensor | float  # counted this epoch (a device tensor for tensor counts)
    _seconds: float  # counted this epoch
    _last: float | None  # the previous update's time; None: the next update starts a segment
    _world_size: int

    def __init__(
        self,
        tokens: bool = False,
        flops_per_item: float | None = None,
        peak_flops: float | None = None,
        *,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        _check_flops(flops_per_item, peak_flops)
        self.tokens = bool(tokens)
        self.name = "Token Throughput" if self.tokens else "Throughput"
        self.unit = "tokens/s" if self.tokens else "items/s"
        self.flops_per_item = flops_per_item
        self.peak_flops = peak_flops
        self.clock = clock
        self.mfu: ModelFlopsUtilization | None = None
        if flops_per_item is not None and peak_flops is not None:
            self.mfu = ModelFlopsUtilization(self, flops_per_item / peak_flops)
        self.clear()

    def companions(self) -> tuple[Numeric, ...]:
        """The `MFU` metric when both FLOPs figures are given (registered beside this one)."""
        return (self.mfu,) if self.mfu is not None else ()

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Count `item`'s items (or tokens) and the time since the previous iteration."""
        now = self.clock()
        count = self._count(item)
        if self._last is None:  # a new segment: the epoch's start, a resume or a pause
            self._world_size = _world_size()
        else:
            self._items = self._items + _widened(count)
            self._seconds += now - self._last
        self._last = now
        return NumericEntry(self._rate(), 1)

    def value(self) -> torch.Tensor:
        """The epoch's items (or tokens) per second so far, over all ranks."""
        rate = self._rate()
        if isinstance(rate, torch.Tensor):
            return rate
        return torch.tensor(rate, dtype=torch.float64)

    def per_device(self) -> torch.Tensor | float:
        """This rank's items (or tokens) per second so far (no host sync)."""
        if self._seconds <= 0.0:
            return 0.0
        return self._items / self._seconds

    def pause(self) -> None:
        """Stop counting time until the next update (which then only restarts the clock).

        Call it before work that is not training but runs inside the epoch, e.g. a validation
        in the middle of an epoch, so that its time is not counted.
        """
        self._last = None

    def clear(self) -> None:
        """Start a new epoch: nothing counted, the clock stopped."""
        self._items = 0.0
        self._seconds = 0.0
        self._last = None
        self._world_size = 1

    def to_record(self) -> dict[str, Any]:
        """The items (or tokens) and seconds counted this epoch (read back at a checkpoint)."""
        return {"items": float(self._items), "seconds": self._seconds}

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue the epoch's counts; the next update restarts the clock."""
        self.clear()
        self._items = float(record.get("items", 0.0))
        self._seconds = float(record.get("seconds", 0.0))

    def _rate(self) -> torch.Tensor | float:
        rate = self.per_device()
        return rate * self._world_size

    def _count(self, item: Any) -> Count:
        field = "num_tokens" if self.tokens else "batch_size"
        count = getattr(item, field, None)
        if isinstance(count, bool) or not isinstance(count, (int, torch.Tensor)):
            raise TypeError(_missing_count(self.tokens, item, count))
        return count


class ModelFlopsUtilization(Numeric):
    """The `MFU` companion of a `ThroughputMetric`: percent of the devices' peak FLOP rate.

    Not built directly: `ThroughputMetric(flops_per_item=..., peak_flops=...)` makes it, and
    registering the throughput metric registers it too, right after it (so each iteration's
    MFU is computed from that iteration's throughput).
    """

    higher_is_better = True
    unit = "%"

    def __init__(self, throughput: ThroughputMetric, flops_ratio: float) -> None:
        self.name = "MFU"
        self.throughput = throughput
        self.flops_ratio = flops_ratio

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """This iteration's MFU from its throughput metric's (already updated) counts."""
        return NumericEntry(self._value(), 1)

    def value(self) -> torch.Tensor:
        """The epoch's MFU so far, in percent."""
        value = self._value()
        if isinstance(value, torch.Tensor):
            return value
        return torch.tensor(value, dtype=torch.float64)

    def _value(self) -> torch.Tensor | float:
        return self.throughput.per_device() * (100.0 * self.flops_ratio)


def _widened(count: Count) -> torch.Tensor | float:
    """A count to add to the totals: a float, or a tensor in the device's widest float."""
    if isinstance(count, torch.Tensor):
        return count.detach().reshape(()).to(accumulate_dtype(count.device))
    return float(count)


def _world_size() -> int:
    """The ranks training together (1 outside `torch.distributed`); a host query."""
    distributed = torch.distributed
    if distributed.is_available() and distributed.is_initialized():
        return distributed.get_world_size()
    return 1


def _check_flops(flops_per_item: float | None, peak_flops: float | None) -> None:
    if (flops_per_item is None) != (peak_flops is None):
        raise ValueError(
            "ThroughputMetric computes MFU from `flops_per_item` and `peak_flops` together. "
            f"Received: flops_per_item={flops_per_item!r}, peak_flops={peak_flops!r}. Give "
            "both (e.g. flops_per_item=6 * num_parameters per token, peak_flops=989e12 for an "
            "H100 in bf16), or neither for the throughput alone."
        )
    for name, value in (("flops_per_item", flops_per_item), ("peak_flops", peak_flops)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"`{name}` must be a number of FLOPs. Received: {name}={value!r}.")
        if not math.isfinite(value) or value <= 0:
            raise ValueError(
                f"`{name}` must be a positive finite number of FLOPs. Received: {name}={value!r}."
            )


def _missing_count(tokens: bool, item: Any, found: Any) -> str:
    kind = type(item).__name__
    if tokens:
        return (
            "ThroughputMetric(tokens=True) counts the `num_tokens` of each step's output: a "
            "`SequenceOutput` has one, or give your output a `num_tokens` field (an int, or a "
            f"0-dim tensor such as the non-padding tokens). Received: a {kind} whose "
            f"`num_tokens` is {found!r}. Add the field, or count items with ThroughputMetric()."
        )
    return (
        "ThroughputMetric counts the `batch_size` of each step's output (every output of "
        f"burnish.train has one). Received: a {kind} whose `batch_size` is {found!r}. Give your "
        "output a `batch_size` (an int), or count tokens with ThroughputMetric(tokens=True)."
    )

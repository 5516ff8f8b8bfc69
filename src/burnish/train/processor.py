"""Feeds step outputs to metrics, logs their entries and drives the renderer (Burn's
`FullEventProcessor`), reading device values back in batches.

Each iteration only calls `metric.update` and keeps the returned entries (device tensors). The
values are copied to the host in one transfer when the renderer is due (~10 Hz), when
`_MAX_PENDING` iterations are waiting, and at the end of each epoch: never one sync per metric
per iteration.

Under `torch.distributed` (a `reduce` function is given) every rank drains at the same
iterations — every `sync_every` iterations and at the end of each epoch — and the entries are
summed over the ranks in one all-reduce, so every rank logs the values one process would have
computed over all ranks' items.

The epoch value of a metric is the count-weighted mean of its logged entries — exactly what
`LearnerSummary`, checkpoint strategies and early stopping read back from the logs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch

from burnish.train.logger.base import MetricLogger
from burnish.train.metric.base import Metric, MetricEntry, MetricMetadata, Numeric, NumericEntry
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot, TrainingProgress
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.tracking import IterationPoints

__all__ = ["MetricsProcessor", "SplitMetrics"]

_MAX_PENDING = 32  # pending 0-dim tensors fragment the heap (~0.5 MiB RSS each): read back often

Reduce = Callable[[torch.Tensor], torch.Tensor]


@dataclasses.dataclass
class SplitMetrics:
    """The metrics of one split and where their entries go."""

    split: Split
    metrics: list[Metric]
    logger: MetricLogger
    pending: list[list[NumericEntry]] = dataclasses.field(default_factory=list)
    text: dict[str, str] = dataclasses.field(default_factory=dict)
    # Per numeric metric, the epoch's sum of value * count and of count over logged entries.
    totals: list[list[float]] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        numeric = [m for m in self.metrics if isinstance(m, Numeric)]
        self.numeric: list[Numeric] = [m for m in numeric if not m.computed_per_epoch]
        self.per_epoch: list[Numeric] = [m for m in numeric if m.computed_per_epoch]
        self.totals = [[0.0, 0.0] for _ in self.numeric]


class MetricsProcessor:
    """Updates metrics per iteration; logs and renders them in batched read-backs.

    Args:
        splits: the metrics and logger of each split.
        renderer: the dashboard.
        reduce: sums a tensor over the ranks in place (distributed runs), or None.
        sync_every: with `reduce`, drain every this many iterations (all ranks alike).
        iterations: the trackers' iteration points, told of each iteration and given the
            host values of the pending ones at each drain; None without trackers.
    """

    def __init__(
        self,
        splits: Sequence[SplitMetrics],
        renderer: MetricsRenderer,
        reduce: Reduce | None = None,
        sync_every: int = 16,
        iterations: IterationPoints | None = None,
    ) -> None:
        self.splits = {s.split: s for s in splits}
        self.iterations = iterations
        self.renderer = renderer
        self.reduce = reduce
        self.sync_every = sync_every

    def process(
        self, split: Split, item: Any, metadata: MetricMetadata, progress: TrainingProgress
    ) -> None:
        """Update every metric of `split` with one step's output `item`."""
        state = self.splits[split]
        row: list[NumericEntry] = []
        for metric in state.metrics:
            entry = metric.update(item, metadata)
            if isinstance(metric, Numeric):
                if not metric.computed_per_epoch:
                    row.append(cast(NumericEntry, entry))
            elif entry is not None:  # a text metric: shown, and logged as Burn logs it
                text = cast(MetricEntry, entry)
                state.text[metric.name] = text.formatted
                state.logger.log(metric.name, metadata.epoch, [text])
        state.pending.append(row)
        if self.iterations is not None:
            self.iterations.note(split, len(state.pending) - 1, metadata)
        if self.reduce is None:
            render = self.renderer.due()
            drain = render or len(state.pending) >= _MAX_PENDING
        else:  # the same iterations on every rank: draining is a collective
            drain = len(state.pending) >= self.sync_every
            render = drain and self.renderer.due()
        if drain:
            self._drain(state, metadata.epoch, progress if render else None)

    def end_epoch(self, split: Split, epoch: int) -> dict[str, float]:
        """Write the epoch's remaining entries, close its logs, clear the metrics.

        Returns:
            The epoch value of each numeric metric: the count-weighted mean of its entries.
        """
        state = self.splits[split]
        self._drain(state, epoch, None)
        values = {m.name: _mean(total) for m, total in zip(state.numeric, state.totals)}
        values.update(self._per_epoch_values(state, epoch))
        values = {m.name: values[m.name] for m in state.metrics if m.name in values}
        state.logger.end_epoch(epoch)
        self.renderer.end_epoch(split, epoch, values)
        self.clear(split)
        return values

    def clear(self, split: Split) -> None:
        """Forget the split's epoch: metrics, pending entries and totals."""
        state = self.splits[split]
        for metric in state.metrics:
            metric.clear()
        state.pending.clear()
        if self.iterations is not None:
            self.iterations.forget(split)
        state.text.clear()
        state.totals = [[0.0, 0.0] for _ in state.numeric]

    def flush(self, epoch: int) -> None:
        """Write every pending entry and flush the loggers (before a checkpoint)."""
        for state in self.splits.values():
            self._drain(state, epoch, None)
            state.logger.flush()

    def to_record(self) -> dict[str, Any]:
        """The metrics' mid-epoch state; call `flush` first."""
        return {
            split.value: {
                "metrics": {m.name: m.to_record() for m in state.metrics},
                "totals": [list(total) for total in state.totals],
            }
            for split, state in self.splits.items()
        }

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue from a `to_record()` of the same metrics (matched by name)."""
        for split, state in self.splits.items():
            saved = record.get(split.value, {})
            for metric in state.metrics:
                if metric.name in saved.get("metrics", {}):
                    metric.load_record(saved["metrics"][metric.name])
            if len(saved.get("totals", [])) == len(state.numeric):
                state.totals = [[float(a), float(b)] for a, b in saved["totals"]]

    def _per_epoch_values(self, state: SplitMetrics, epoch: int) -> dict[str, float]:
        """Compute, log and return the metrics computed once per epoch (a collective)."""
        values: dict[str, float] = {}
        for metric in state.per_epoch:
            entry = metric.epoch_entry()
            [value] = _to_host([entry.value])
            count = entry.count
            if self.reduce is not None:  # the value is already global; the count is not
                total = self.reduce(torch.tensor([float(count)], dtype=torch.float64))
                count = int(total[0])
            state.logger.log(metric.name, epoch, [NumericEntry(value, count)])
            values[metric.name] = value
        return values

    def _drain(self, state: SplitMetrics, epoch: int, progress: TrainingProgress | None) -> None:
        numeric = state.numeric
        if not state.pending and progress is None:  # pending is the same length on every rank
            return
        values = [entry.value for row in state.pending for entry in row]
        shown = numeric + state.per_epoch
        running = [m.value() for m in shown] if progress is not None else []
        host = _to_host(values + running)
        counts = [entry.count for row in state.pending for entry in row]
        rows, counts = self._reduced(host[: len(values)], counts)
        if self.iterations is not None:
            self.iterations.drained(state.split, [m.name for m in numeric], rows)
        width = len(numeric)
        for j, metric in enumerate(numeric):
            entries = [
                NumericEntry(rows[i * width + j], counts[i * width + j])
                for i in range(len(state.pending))
            ]
            for i in range(len(state.pending)):
                state.totals[j][0] += rows[i * width + j] * counts[i * width + j]
                state.totals[j][1] += counts[i * width + j]
            if entries:
                state.logger.log(metric.name, epoch, entries)
        if progress is not None:
            current = rows[-width:] if rows else [float("nan")] * width
            running_host = host[len(values) :]
            view = {m.name: (current[j], running_host[j]) for j, m in enumerate(numeric)}
            for j, metric in enumerate(state.per_epoch, len(numeric)):  # no batch value
                view[metric.name] = (running_host[j], running_host[j])
            self.renderer.render(RenderSnapshot(state.split, progress, view, dict(state.text)))
        state.pending.clear()

    def _reduced(self, values: list[float], counts: list[int]) -> tuple[list[float], list[int]]:
        """Entries summed over the ranks: value = sum(value * count) / sum(count)."""
        if self.reduce is None:
            return values, counts
        table = torch.tensor(
            [[v * c, float(c)] for v, c in zip(values, counts)], dtype=torch.float64
        ).reshape(-1, 2)
        table = self.reduce(table)
        weighted, total = table[:, 0].tolist(), table[:, 1].tolist()
        return [w / t if t else float("nan") for w, t in zip(weighted, total)], [
            int(t) for t in total
        ]


def _mean(total: list[float]) -> float:
    return total[0] / total[1] if total[1] else float("nan")


def _to_host(values: list[Any]) -> list[float]:
    """Python floats for a list of floats and 0-dim tensors: one transfer per device."""
    out: list[float] = [0.0] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            by_device.setdefault(value.device, []).append(i)
        else:
            out[i] = float(value)
    for device, indices in by_device.items():
        # One kernel and one copy: `stack` promotes floating values to the widest of their
        # dtypes, which holds each exactly. An integer beside float32 values might not fit
        # float32's 24 bits: then every value is widened first (MPS has no float64).
        tensors = [values[i].detach().reshape(()) for i in indices]
        stacked = torch.stack(tensors)
        if stacked.dtype.itemsize < 8 and not all(t.is_floating_point() for t in tensors):
            wide = torch.float32 if device.type == "mps" else torch.float64
            stacked = torch.stack([t.to(wide) for t in tensors])
        for i, value in zip(indices, stacked.tolist()):
            out[i] = float(value)
    return out

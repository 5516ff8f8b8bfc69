"""Feeds step outputs to metrics, logs their entries and drives the renderer (Burn's
`FullEventProcessor`), reading device values back in batches.

Each iteration only calls `metric.update` and keeps the returned entries (device tensors). The
values are copied to the host in one transfer when the renderer is due (~10 Hz), when
`_MAX_PENDING` iterations are waiting, and at the end of each epoch: never one sync per metric
per iteration.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import torch

from burnish.train.metric.base import Metric, MetricMetadata, Numeric, NumericEntry
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot, TrainingProgress

__all__ = ["MetricsProcessor", "SplitMetrics"]

_MAX_PENDING = 256


@dataclasses.dataclass
class SplitMetrics:
    """The metrics of one split (`"train"` or `"valid"`) and where their entries go."""

    split: str
    metrics: list[Metric]
    logger: Any  # MetricLogger
    pending: list[list[NumericEntry]] = dataclasses.field(default_factory=list)
    text: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def numeric(self) -> list[Numeric]:
        return [m for m in self.metrics if isinstance(m, Numeric)]


class MetricsProcessor:
    """Updates metrics per iteration; logs and renders them in batched read-backs."""

    def __init__(self, splits: Sequence[SplitMetrics], renderer: MetricsRenderer) -> None:
        self.splits = {s.split: s for s in splits}
        self.renderer = renderer

    def process(
        self, split: str, item: Any, metadata: MetricMetadata, progress: TrainingProgress
    ) -> None:
        """Update every metric of `split` with one step's output `item`."""
        state = self.splits[split]
        row = []
        for metric in state.metrics:
            entry = metric.update(item, metadata)
            if isinstance(metric, Numeric):
                row.append(entry)
            elif entry is not None:
                state.text[metric.name] = entry.formatted
        state.pending.append(row)
        render = self.renderer.due()
        if render or len(state.pending) >= _MAX_PENDING:
            self._drain(state, metadata.epoch, progress if render else None)

    def end_epoch(self, split: str, epoch: int) -> dict[str, float]:
        """Write the epoch's remaining entries, close its logs, clear the metrics.

        Returns:
            The epoch value of each numeric metric (batch-size-weighted mean).
        """
        state = self.splits[split]
        self._drain(state, epoch, None)
        values = dict(
            zip([m.name for m in state.numeric], _to_host([m.value() for m in state.numeric]))
        )
        state.logger.end_epoch(epoch)
        self.renderer.end_epoch(split, epoch, values)
        for metric in state.metrics:
            metric.clear()
        state.text.clear()
        return values

    def flush(self, epoch: int) -> None:
        """Write every pending entry and flush the loggers (before a checkpoint)."""
        for state in self.splits.values():
            self._drain(state, epoch, None)
            state.logger.flush()

    def to_record(self) -> dict[str, Any]:
        """The metrics' mid-epoch state; call `flush` first."""
        return {
            split: {m.name: m.to_record() for m in state.metrics}
            for split, state in self.splits.items()
        }

    def load_record(self, record: dict[str, Any]) -> None:
        for split, state in self.splits.items():
            for metric in state.metrics:
                if metric.name in record.get(split, {}):
                    metric.load_record(record[split][metric.name])

    def _drain(self, state: SplitMetrics, epoch: int, progress: TrainingProgress | None) -> None:
        numeric = state.numeric
        if not state.pending and progress is None:
            return
        values = [entry.value for row in state.pending for entry in row]
        running = [m.value() for m in numeric] if progress is not None else []
        host = _to_host(values + running)
        rows, running_host = host[: len(values)], host[len(values) :]
        width = len(numeric)
        for j, metric in enumerate(numeric):
            entries = [
                NumericEntry(rows[i * width + j], row[j].count)
                for i, row in enumerate(state.pending)
            ]
            if entries:
                state.logger.log(metric.name, epoch, entries)
        if progress is not None:
            current = rows[-width:] if rows else [float("nan")] * width
            numeric_view = {m.name: (current[j], running_host[j]) for j, m in enumerate(numeric)}
            self.renderer.render(
                RenderSnapshot(state.split, progress, numeric_view, dict(state.text))
            )
        state.pending.clear()


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
        dtype = torch.float32 if device.type == "mps" else torch.float64  # MPS has no float64
        stacked = torch.stack([values[i].detach().reshape(()).to(dtype) for i in indices])
        for i, value in zip(indices, stacked.tolist()):
            out[i] = value
    return out

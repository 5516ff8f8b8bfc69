"""Feeds step outputs to metrics, logs their entries and drives the renderer (Burn's
`FullEventProcessor`), reading device values back in batches.

Each iteration only calls `metric.update` and keeps the returned entries (device tensors). The
values are copied to the host in one transfer when the renderer is due (~10 Hz), when
`_MAX_PENDING` iterations are waiting, and at the end of each epoch: never one sync per metric
per iteration.

Under `torch.distributed` (a `reduce` function is given) every rank drains at the same
iterations — every `sync_every` iterations and at the end of each epoch — and the entries are
summed over the ranks in one all-reduce, so every rank logs the values one process would have
computed over all ranks' items. A rank whose (uneven) validation shard has run out gets
`NO_BATCH` and adds zero-weight entries, so the ranks stay in step.

The epoch value of a metric is its own: `value()` at the epoch's end, read back in one
transfer (see epoch_value.py for several ranks). It goes to the renderer (and trackers) and,
with the statistics of the logged entries, to the logger's epoch aggregates
(`MetricLogger.log_aggregates`), which `LearnerSummary`, checkpoint strategies and early
stopping read back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch

from burnish.train.logger.base import MetricLogger
from burnish.train.logger.epoch_aggregates import EntryStats
from burnish.train.loop.data_adapter import NO_BATCH
from burnish.train.metric.base import (
    Metric,
    MetricEntry,
    MetricInputError,
    MetricMetadata,
    Numeric,
    NumericEntry,
)
from burnish.train.metric.state import sum_over_ranks
from burnish.train.parallel.epoch_value import epoch_totals, numeric_state, value_from_totals
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot, TrainingProgress
from burnish.train.report.logged_values import LoggedValues
from burnish.train.report.read_back import to_host as _to_host
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.report.watcher import Watcher

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
    # Per numeric metric: statistics of the epoch's logged entries (all ranks), and the items
    # this rank gave it (the weight of its `value()` under ranks, without a metric state).
    logged: list[EntryStats] = dataclasses.field(default_factory=list)
    items: list[int] = dataclasses.field(default_factory=list)
    # Under ranks: the metric states summed over the ranks at the last `flush` (for records).
    global_totals: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    # The numeric values of the last iteration read back (host floats).
    latest: dict[str, float] = dataclasses.field(default_factory=dict)
    # The epoch values of the epoch closing (`end_epoch`), which logged values join.
    closing: dict[str, float] | None = None

    def __post_init__(self) -> None:
        numeric = [m for m in self.metrics if isinstance(m, Numeric)]
        self.numeric: list[Numeric] = [m for m in numeric if not m.computed_per_epoch]
        self.per_epoch: list[Numeric] = [m for m in numeric if m.computed_per_epoch]
        self.logged_values = LoggedValues(m.name for m in self.metrics)
        self.forget_epoch()

    def forget_epoch(self) -> None:
        """Reset what the processor keeps about the epoch (not the metrics themselves)."""
        self.pending.clear()
        self.text.clear()
        self.logged = [EntryStats() for _ in self.numeric]
        self.items = [0 for _ in self.numeric]
        self.global_totals = {}
        self.logged_values.clear()


class MetricsProcessor:
    """Updates metrics per iteration; logs and renders them in batched read-backs.

    Args:
        splits: the metrics and logger of each split.
        renderer: the dashboard.
        reduce: sums a tensor over the ranks in place (distributed runs), or None.
        sync_every: with `reduce`, drain every this many iterations (all ranks alike).
        rank: this process's rank (with `reduce`): after a resume, rank 0 holds the metric
            states of all ranks and the others start from zero.
        watchers: see each item before the metrics do; their pending device values are read
            back with the split's entries and handed back to them with the entries' values
            (report/watcher.py).
    """

    def __init__(
        self,
        splits: Sequence[SplitMetrics],
        renderer: MetricsRenderer,
        reduce: Reduce | None = None,
        sync_every: int = 16,
        *,
        rank: int = 0,
        watchers: Sequence[Watcher] = (),
    ) -> None:
        self.splits = {s.split: s for s in splits}
        self.watchers = list(watchers)
        self.renderer = renderer
        self.reduce = reduce
        self.sync_every = sync_every
        self.rank = rank

    def process(
        self, split: Split, item: Any, metadata: MetricMetadata, progress: TrainingProgress
    ) -> dict[str, float] | None:
        """Update every metric of `split` with one step's output `item`.

        `item` is `NO_BATCH` when this rank's validation shard has no batch at this iteration:
        no metric is updated and the rank adds zero-weight entries to the collective drains.

        Returns:
            When the pending entries were read back at this iteration, this iteration's value
            of each numeric metric (host floats, for the listeners); else None.
        """
        state = self.splits[split]
        for watcher in self.watchers:
            watcher.note(split, len(state.pending), item, metadata)
        if item is NO_BATCH:
            row = [NumericEntry(0.0, 0) for _ in state.numeric]
        else:
            row = self._update(state, item, metadata)
        state.pending.append(row)
        if self.reduce is None:
            render = self.renderer.due()
            drain = render or len(state.pending) >= _MAX_PENDING
        else:  # the same iterations on every rank: draining is a collective
            drain = len(state.pending) >= self.sync_every
            render = drain and self.renderer.due()
        if not drain:
            return None
        self._drain(state, metadata.epoch, progress if render else None)
        return state.latest

    def _update(
        self, state: SplitMetrics, item: Any, metadata: MetricMetadata
    ) -> list[NumericEntry]:
        """Update the metrics with `item`; log text entries; return the numeric entries."""
        row: list[NumericEntry] = []
        try:  # no cost unless raised (zero-cost exceptions since Python 3.11)
            for metric in state.metrics:
                entry = metric.update(item, metadata)
                if isinstance(metric, Numeric):
                    if not metric.computed_per_epoch:
                        row.append(cast(NumericEntry, entry))
                elif entry is not None:  # a text metric: shown, and logged as Burn logs it
                    text = cast(MetricEntry, entry)
                    state.text[metric.name] = text.formatted
                    state.logger.log(metric.name, metadata.epoch, [text])
        except MetricInputError as error:  # which metric, which split, which step
            raise error.for_metric(metric, str(state.split.value)) from None
        return row

    def end_epoch(
        self,
        split: Split,
        epoch: int,
        shown_epoch: int | None = None,
        closing: Callable[[MutableMapping[str, float]], None] | None = None,
    ) -> dict[str, float]:
        """Write the epoch's remaining entries, close its logs, clear the metrics.

        `closing` gets the epoch values before the logs close: values logged then (`log`)
        join them. The epoch values then go to the renderer (as those of `shown_epoch`, default
        `epoch`: a validation inside an epoch is shown in the training epoch) and, with the
        statistics of the logged entries, to the logger's aggregates of `epoch` (after its
        `end_epoch`).

        Returns:
            The epoch value of each numeric metric: its `value()` at the epoch's end (over all
            ranks), or the one entry of a metric `computed_per_epoch`.
        """
        state = self.splits[split]
        parts = self._epoch_parts(state)
        host = self._drain(state, epoch, None, parts)  # one read-back: last entries and values
        values = dict(zip([m.name for m in state.numeric], self._epoch_values(state, host)))
        aggregates = {
            m.name: stats.aggregate(values[m.name]) for m, stats in zip(state.numeric, state.logged)
        }
        for name, value in self._per_epoch_values(state, epoch).items():
            values[name] = value
            aggregates[name] = EntryStats.of([(value, 1)]).aggregate(value)
        order = [m.name for m in state.metrics if m.name in values]
        values = {name: values[name] for name in order}
        values.update(state.logged_values.values())  # logged in the epoch's iterations
        if closing is not None:
            state.closing = values
            try:
                closing(values)
            finally:
                state.closing = None
        own = state.logged_values.aggregates()
        aggregates.update(own)
        order += [name for name in values if name in own]
        state.logger.end_epoch(epoch)
        state.logger.log_aggregates(epoch, {name: aggregates[name] for name in order})
        self.renderer.end_epoch(split, epoch if shown_epoch is None else shown_epoch, values)
        self.clear(split)
        return values

    def clear(self, split: Split) -> None:
        """Forget the split's epoch: metrics, pending entries and entry statistics."""
        state = self.splits[split]
        for metric in state.metrics:
            metric.clear()
        state.forget_epoch()
        for watcher in self.watchers:
            watcher.forget(split)

    def log(self, split: Split, epoch: int, name: str, value: float | torch.Tensor) -> None:
        """A value of the run's own (`event.log`) for `split`'s epoch `epoch`: an entry in its
        log now; its epoch value (the mean) joins the metrics' (report/logged_values.py)."""
        state = self.splits[split]
        number = state.logged_values.add(name, value)
        state.logger.log(name, epoch, [NumericEntry(number, 1)])
        if state.closing is not None:
            state.closing[name] = state.logged_values.values()[name]

    def hand_over(self, split: Split, epoch: int) -> None:
        """Read `split`'s pending entries back now (a collective with several ranks): before a
        validation inside the epoch, so that the trackers get the points in the run's order."""
        self._drain(self.splits[split], epoch, None)

    def flush(self, epoch: int) -> None:
        """Write every pending entry and flush the loggers (before a checkpoint).

        Under ranks (a collective) the metric states are also summed over the ranks, for
        `to_record`: a resumed run must continue the epoch value of all ranks. A metric with a
        `gather_for_record()` method (AUROC, AUC-PR: every score of the epoch) gathers the
        ranks' items itself there.
        """
        for state in self.splits.values():
            self._drain(state, epoch, None)
            state.logger.flush()
            if self.reduce is not None:
                state.global_totals = self._global_totals(state)
                for metric in state.per_epoch:
                    gather = getattr(metric, "gather_for_record", None)
                    if callable(gather):
                        gather()

    def logged_names(self) -> set[str]:
        """Every name the run's components logged (`log`), on any split."""
        return {name for state in self.splits.values() for name in state.logged_values.seen}

    def to_record(self) -> dict[str, Any]:
        """The metrics' mid-epoch state; call `flush` first."""
        return {
            split.value: {
                "metrics": {m.name: m.to_record() for m in state.metrics},
                "logged": {m.name: s.to_record() for m, s in zip(state.numeric, state.logged)},
                "global_totals": dict(state.global_totals),
                "logged_values": state.logged_values.to_record(),
            }
            for split, state in self.splits.items()
        }

    def load_record(self, record: dict[str, Any]) -> None:
        """Continue from a `to_record()` of the same metrics (matched by name).

        Under ranks the record is rank 0's: rank 0 takes the states summed over all ranks,
        the other ranks start their states from zero, so their sum continues exactly.
        """
        for split, state in self.splits.items():
            saved = record.get(split.value, {})
            for metric in state.metrics:
                if metric.name in saved.get("metrics", {}):
                    metric.load_record(saved["metrics"][metric.name])
            state.logged = _logged_from_record(state.numeric, saved)
            state.logged_values.load_record(saved.get("logged_values"))
            totals = saved.get("global_totals", {})
            for metric in state.numeric if self.reduce is not None else []:
                own = numeric_state(metric)
                if own is not None and metric.name in totals:
                    total, count = totals[metric.name] if self.rank == 0 else (0.0, 0.0)
                    own.load_record({"sum": total, "count": count}, metric.name)

    def _epoch_parts(self, state: SplitMetrics) -> list[Any]:
        """What to read back for the epoch values (device values, no sync): each metric's
        `value()`; under ranks, its `epoch_totals` (see epoch_value.py)."""
        if self.reduce is None:
            return [metric.value() for metric in state.numeric]
        items = list(state.items)
        for row in state.pending:  # not drained yet
            for j, entry in enumerate(row):
                items[j] += entry.count
        return [part for m, n in zip(state.numeric, items) for part in epoch_totals(m, n)]

    def _epoch_values(self, state: SplitMetrics, host: list[float]) -> list[float]:
        """The epoch values from the read-back `_epoch_parts`; under ranks, the totals of all
        ranks are summed in one all-reduce first."""
        if self.reduce is None:
            return host
        totals = self._reduce_totals(host)
        records = self._summed_states(state)
        return [
            value_from_totals(m, *records.get(m.name, (total, count)))
            for m, (total, count) in zip(state.numeric, totals)
        ]

    def _summed_states(self, state: SplitMetrics) -> dict[str, tuple[Any, float]]:
        """The metric states summed over the ranks (`sum` of any shape), by metric name."""
        assert self.reduce is not None
        states = [(m, numeric_state(m)) for m in state.numeric]
        stateful = [(m, own) for m, own in states if own is not None]
        records = sum_over_ranks([own for _, own in stateful], self.reduce)
        return {m.name: (r["sum"], r["count"]) for (m, _), r in zip(stateful, records)}

    def _reduce_totals(self, host: list[float]) -> list[tuple[float, float]]:
        """`[sum, count, sum, count, ...]` summed over the ranks (one all-reduce)."""
        assert self.reduce is not None
        table = self.reduce(torch.tensor(host, dtype=torch.float64).reshape(-1, 2))
        return [(total, count) for total, count in table.tolist()]

    def _global_totals(self, state: SplitMetrics) -> dict[str, list[float]]:
        """The metric states summed over the ranks, by name (metrics with a state only)."""
        return {name: list(record) for name, record in self._summed_states(state).items()}

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

    def _drain(
        self,
        state: SplitMetrics,
        epoch: int,
        progress: TrainingProgress | None,
        extra: Sequence[Any] = (),
    ) -> list[float]:
        """Read the pending entries back (with `extra` values, returned as host floats in the
        same transfer), log them, and render them when `progress` is given."""
        numeric = state.numeric
        if not state.pending and progress is None and not extra:  # same on every rank
            return []
        values = [entry.value for row in state.pending for entry in row]
        watched_by = [watcher.pending(state.split) for watcher in self.watchers]
        watched = [value for own in watched_by for value in own]
        shown = numeric + state.per_epoch
        running = [m.value() for m in shown] if progress is not None else []
        host = _to_host(values + watched + running + list(extra))
        counts = [entry.count for row in state.pending for entry in row]
        width = len(numeric)
        for i, count in enumerate(counts):
            state.items[i % width] += count  # this rank's items, before the reduction
        rows, counts = self._reduced(
            host[: len(values) + len(watched)], counts + [1] * len(watched)
        )
        own, rows, counts = rows[len(values) :], rows[: len(values)], counts[: len(values)]
        host = host[: len(values)] + host[len(values) + len(watched) :]
        names = [m.name for m in numeric]
        for watcher, pending in zip(self.watchers, watched_by):  # their values over all ranks
            watcher.drained(state.split, names, rows, own[: len(pending)])
            own = own[len(pending) :]
        for j, metric in enumerate(numeric):
            entries = [
                NumericEntry(rows[i * width + j], counts[i * width + j])
                for i in range(len(state.pending))
            ]
            for entry in entries:
                state.logged[j].add(cast(float, entry.value), entry.count)
            if entries:
                state.logger.log(metric.name, epoch, entries)
        state.latest = dict(zip([m.name for m in numeric], rows[-width:])) if rows else {}
        if progress is not None:
            current = rows[-width:] if rows else [float("nan")] * width
            running_host = host[len(values) : len(values) + len(running)]
            view = {m.name: (current[j], running_host[j]) for j, m in enumerate(numeric)}
            for j, metric in enumerate(state.per_epoch, len(numeric)):  # no batch value
                view[metric.name] = (running_host[j], running_host[j])
            self.renderer.render(RenderSnapshot(state.split, progress, view, dict(state.text)))
        state.pending.clear()
        return host[len(values) + len(running) :]

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


def _logged_from_record(numeric: list[Numeric], saved: dict[str, Any]) -> list[EntryStats]:
    """The entry statistics of a record; a record from before them has `totals` (the weighted
    sum and count of each metric's entries: their min and max are then those after resume)."""
    logged = saved.get("logged")
    if isinstance(logged, dict):
        return [
            EntryStats.from_record(logged[m.name]) if m.name in logged else EntryStats()
            for m in numeric
        ]
    totals = saved.get("totals", [])
    if len(totals) == len(numeric):
        return [EntryStats(float(total), int(count)) for total, count in totals]
    return [EntryStats() for _ in numeric]

"""MetricsProcessor: when entries are read back, how ranks are reduced, the epoch value (the
metric's own `value()`, over all ranks) and its aggregates, and mid-epoch records."""

from __future__ import annotations

import threading

import pytest
import torch

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.logger.epoch_aggregates import MetricAggregate
from burnish.train.loop.data_adapter import NO_BATCH, BurnishDataAdapter
from burnish.train.metric import LossInput, LossMetric, MetricMetadata, Progress
from burnish.train.metric.base import Numeric, NumericEntry
from burnish.train.metric.state import StatefulNumeric
from burnish.train.renderer import MetricsRenderer, TrainingProgress
from burnish.train.report.processor import _MAX_PENDING, MetricsProcessor, SplitMetrics, _to_host
from burnish.train.split import Split


class RecordingRenderer(MetricsRenderer):
    """Due when told; keeps every snapshot and epoch end it is given."""

    def __init__(self, due: bool = False) -> None:
        self.is_due = due
        self.snapshots = []
        self.epochs = []

    def start(self, num_epochs, interrupter):
        pass

    def due(self):
        return self.is_due

    def render(self, snapshot):
        self.snapshots.append(snapshot)

    def end_epoch(self, split, epoch, values):
        self.epochs.append((split, epoch, values))

    def close(self):
        pass


def processor(renderer=None, reduce=None, sync_every=16):
    logger = InMemoryMetricLogger()
    splits = [SplitMetrics(Split.TRAIN, [LossMetric()], logger)]
    return MetricsProcessor(splits, renderer or RecordingRenderer(), reduce, sync_every), logger


def step(processor, iteration, loss, batch_size=2, epoch=1):
    item = LossInput(torch.tensor([loss] * batch_size), batch_size)
    metadata = MetricMetadata(Progress(iteration * batch_size, 100), epoch, 3, iteration, 0.1)
    progress = TrainingProgress(epoch, 3, iteration, iteration * batch_size, 100)
    processor.process(Split.TRAIN, item, metadata, progress)


def logged(logger, epoch=1):
    return [(entry.value, entry.count) for entry in logger.read_numeric("Loss", epoch)]


def test_entries_wait_on_the_device_until_the_pending_limit():
    proc, logger = processor()
    for iteration in range(1, _MAX_PENDING):
        step(proc, iteration, float(iteration))
    assert logged(logger) == []  # nothing read back yet: no sync per iteration
    step(proc, _MAX_PENDING, float(_MAX_PENDING))
    assert logged(logger) == [(float(i), 2) for i in range(1, _MAX_PENDING + 1)]


def test_a_due_renderer_drains_every_iteration_with_current_and_running_values():
    renderer = RecordingRenderer(due=True)
    proc, logger = processor(renderer)
    step(proc, 1, 1.0, batch_size=1)
    step(proc, 2, 4.0, batch_size=3)
    assert logged(logger) == [(1.0, 1), (4.0, 3)]
    current, running = renderer.snapshots[-1].numeric["Loss"]
    assert (current, running) == (4.0, (1.0 + 12.0) / 4)
    assert renderer.snapshots[-1].progress.iteration == 2


def test_end_epoch_returns_the_count_weighted_mean_and_clears():
    renderer = RecordingRenderer()
    proc, logger = processor(renderer)
    step(proc, 1, 1.0, batch_size=1)
    step(proc, 2, 4.0, batch_size=3)
    values = proc.end_epoch(Split.TRAIN, 1)
    assert values == {"Loss": 13.0 / 4}
    assert renderer.epochs == [(Split.TRAIN, 1, {"Loss": 13.0 / 4})]
    assert logged(logger) == [(1.0, 1), (4.0, 3)]
    step(proc, 1, 10.0, epoch=2)
    assert proc.end_epoch(Split.TRAIN, 2) == {"Loss": 10.0}  # epoch 1 forgotten


def test_with_ranks_drains_at_sync_every_and_logs_values_over_all_ranks():
    # Two ranks in threads; the other saw the same iterations with loss 3.0 on batches of 2.
    # The epoch value is the state summed over the ranks (it was the mean of the entries).
    ranks = ThreadRanks(2)
    calls = []

    def run(rank):
        proc, logger = processor(RecordingRenderer(due=True), ranks.reduce(rank), 4)
        for iteration in range(1, 5):
            if rank == 0:
                calls.append(len(ranks.tables))
            step(proc, iteration, 1.0 if rank == 0 else 3.0)
        return logger, proc.end_epoch(Split.TRAIN, 1)

    (logger, values), (_, other_values) = ranks.run(run)
    assert calls == [0, 0, 0, 0]  # due renderer or not: no collective before the 4th
    assert logged(logger) == [((1.0 * 2 + 3.0 * 2) / 4, 4)] * 4
    assert values == other_values == {"Loss": 2.0}


def test_a_record_taken_mid_epoch_continues_exactly():
    losses = [0.5, 1.5, 2.5, 4.0, 7.0]
    uninterrupted, reference = processor()
    for iteration, loss in enumerate(losses, 1):
        step(uninterrupted, iteration, loss)
    expected = uninterrupted.end_epoch(Split.TRAIN, 1)

    first, logger = processor()
    for iteration, loss in enumerate(losses[:3], 1):
        step(first, iteration, loss)
    first.flush(1)
    record = first.to_record()
    assert record["train"]["metrics"]["Loss"] == {"sum": (0.5 + 1.5 + 2.5) * 2, "count": 6.0}
    assert record["train"]["logged"]["Loss"] == {
        "total": (0.5 + 1.5 + 2.5) * 2,
        "count": 6,
        "min": 0.5,
        "max": 2.5,
        "lines": 3,
    }

    resumed = MetricsProcessor(
        [SplitMetrics(Split.TRAIN, [LossMetric()], logger)], RecordingRenderer()
    )
    resumed.load_record(record)
    for iteration, loss in enumerate(losses[3:], 4):
        step(resumed, iteration, loss)
    assert resumed.end_epoch(Split.TRAIN, 1) == expected
    assert [value for value, _ in logged(logger)] == losses
    assert logger.read_aggregates(1) == reference.read_aggregates(1)


def test_a_record_from_before_entry_statistics_still_loads():
    """A mid-epoch checkpoint written before the aggregates kept `totals` per metric."""
    proc, logger = processor()
    record = {"train": {"metrics": {"Loss": {"sum": 6.0, "count": 4.0}}, "totals": [[6.0, 4]]}}
    proc.load_record(record)
    step(proc, 3, 3.0)
    assert proc.end_epoch(Split.TRAIN, 1) == {"Loss": (6.0 + 6.0) / 6}
    aggregate = logger.read_aggregates(1)["Loss"]
    assert (aggregate.mean, aggregate.count, aggregate.min, aggregate.max) == (2.0, 6, 3.0, 3.0)


class HitsPerTarget(StatefulNumeric):
    """An epoch-wide ratio (like padded accuracy): hits / targets over the epoch, while each
    entry is the batch's ratio weighted by the batch size — so the entries' mean differs."""

    name = "Hits"

    def update(self, item, metadata):
        hits, targets, batch_size = item
        ratio = self.state.add(torch.tensor(float(hits)), torch.tensor(float(targets)))
        return NumericEntry(ratio, batch_size)


class LastValue(Numeric):
    """A user-defined numeric metric without a NumericMetricState: value() is the last entry."""

    name = "Last"

    def __init__(self):
        self.last = float("nan")

    def update(self, item, metadata):
        self.last = float(item[0])
        return NumericEntry(self.last, item[2])

    def value(self):
        return torch.tensor(self.last)

    def clear(self):
        self.last = float("nan")


def metadata(iteration, epoch=1):
    return (
        MetricMetadata(Progress(iteration, 100), epoch, 3, iteration),
        TrainingProgress(epoch, 3, iteration, iteration, 100),
    )


def test_the_epoch_value_is_the_metrics_value_and_the_aggregates_hold_the_entries():
    renderer = RecordingRenderer()
    logger = InMemoryMetricLogger()
    metrics = [HitsPerTarget(), LastValue()]
    proc = MetricsProcessor([SplitMetrics(Split.VALID, metrics, logger)], renderer)
    batches = [(1, 1, 4), (9, 10, 4), (0, 0, 2)]  # (hits, targets, batch size); last: no target
    for iteration, batch in enumerate(batches, 1):
        proc.process(Split.VALID, batch, *metadata(iteration))
    values = proc.end_epoch(Split.VALID, 1)
    # The entries' count-weighted mean (the old epoch value) leaves the undefined (NaN) last
    # batch out: (1.0 * 4 + 0.9 * 4) / 8; the epoch value is the metric's own, 10 / 11.
    assert values == {"Hits": 10 / 11, "Last": 0.0}
    assert renderer.epochs == [(Split.VALID, 1, values)]
    hits = logger.read_aggregates(1)["Hits"]
    assert hits == MetricAggregate(10 / 11, (1.0 * 4 + 0.9 * 4) / 8, 0.9, 1.0, 8, 3)
    last = logger.read_aggregates(1)["Last"]
    assert last == MetricAggregate(0.0, (1 * 4 + 9 * 4 + 0 * 2) / 10, 0.0, 9.0, 10, 3)
    assert store_value(logger, "Hits") == 10 / 11  # what strategies and the summary read


def store_value(logger, name, epoch=1):
    from burnish.train.metric.store import Aggregate, MetricStore

    return MetricStore({Split.VALID: logger}).find_metric(name, epoch, Aggregate.MEAN, "valid")


class ThreadRanks:
    """`world` ranks as threads with a real all-reduce (sum): each waits for all the others at a
    barrier, so a rank that skips a collective fails the test instead of passing."""

    def __init__(self, world):
        self.world = world
        self.barrier = threading.Barrier(world, timeout=30)
        self.tables = []

    def reduce(self, rank):
        def all_reduce(table):
            self.barrier.wait()
            self.tables.append((rank, table.clone()))
            self.barrier.wait()
            total = sum(t for _, t in self.tables[-self.world :])
            self.barrier.wait()
            return total

        return all_reduce

    def run(self, function):
        results, errors = [None] * self.world, []

        def target(rank):
            try:
                results[rank] = function(rank)
            except BaseException as error:  # reported by the test's thread
                errors.append(error)
                self.barrier.abort()

        threads = [threading.Thread(target=target, args=(r,)) for r in range(self.world)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return results


class ItemLoss(Batcher):
    """Item i has loss i / 10, a hit when i is even, and i % 3 targets (0: no target)."""

    def batch(self, items, device):
        return [(i / 10, i % 2 == 0, i % 3) for i in items]


def feed(proc, adapter, split=Split.VALID):
    for iteration, batch in enumerate(adapter.iterate(), 1):
        if batch is NO_BATCH:
            item = NO_BATCH
        else:
            losses = torch.tensor([loss for loss, _, _ in batch], dtype=torch.float64)
            hits = sum(hit and targets > 0 for _, hit, targets in batch)
            item = (LossInput(losses, len(batch)), (hits, sum(t for _, _, t in batch), len(batch)))
        proc.process(split, item, *metadata(iteration))


class PairLoss(LossMetric):
    def update(self, item, metadata):
        return super().update(item[0], metadata)


class PairHits(HitsPerTarget):
    def update(self, item, metadata):
        return super().update(item[1], metadata)


def split_metrics(logger):
    return [SplitMetrics(Split.VALID, [PairLoss(), PairHits()], logger)]


@pytest.mark.parametrize(("num_items", "world"), [(9, 2), (13, 4), (3, 4)])
def test_uneven_validation_shards_under_ranks_equal_one_process(num_items, world):
    """Validation shards without padding: each item counted once; a rank whose shard ended
    takes part in the collectives with zero-weight entries (NO_BATCH)."""
    dataset = InMemDataset(list(range(num_items)))
    batch_size = 2

    def loader(size):
        return DataLoaderBuilder(ItemLoss()).batch_size(size).build(dataset)

    alone = MetricsProcessor(split_metrics(one := InMemoryMetricLogger()), RecordingRenderer())
    feed(alone, BurnishDataAdapter(loader(batch_size * world)))
    expected = alone.end_epoch(Split.VALID, 1)

    ranks = ThreadRanks(world)

    def run(rank):
        logger = InMemoryMetricLogger()
        proc = MetricsProcessor(
            split_metrics(logger), RecordingRenderer(), ranks.reduce(rank), 2, rank=rank
        )
        adapter = BurnishDataAdapter(loader(batch_size)).shard(rank, world, pad=False)
        feed(proc, adapter)
        return logger, proc.end_epoch(Split.VALID, 1)

    results = ranks.run(run)
    for _, values in results:
        assert values.keys() == expected.keys()
        for name in expected:
            assert values[name] == pytest.approx(expected[name], rel=1e-12, abs=1e-12)
    # Per iteration, the ranks' entries are combined by item count: one process's batch loss
    # (a batch ratio such as Hits is logged as the ranks' count-weighted mean instead).
    ours = [(e.value, e.count) for e in results[0][0].read_numeric("Loss", 1)]
    theirs = [(e.value, e.count) for e in one.read_numeric("Loss", 1)]
    assert [c for _, c in ours] == [c for _, c in theirs]
    assert [v for v, _ in ours] == pytest.approx([v for v, _ in theirs], rel=1e-12)


def test_a_mid_epoch_record_under_ranks_holds_every_ranks_state():
    """Rank 0 writes the record; after a resume rank 0 holds the sum of all ranks' states and
    the others zero, so the epoch value equals the uninterrupted run's."""
    losses = {0: [1.0, 2.0, 3.0, 4.0], 1: [10.0, 20.0, 30.0, 40.0]}

    def straight(rank):
        proc, _ = processor(reduce=ranks.reduce(rank), sync_every=2)
        for iteration, loss in enumerate(losses[rank], 1):
            step(proc, iteration, loss)
        return proc.end_epoch(Split.TRAIN, 1)

    ranks = ThreadRanks(2)
    expected = ranks.run(straight)[0]

    def first_half(rank):
        proc, _ = processor(reduce=ranks.reduce(rank), sync_every=2)
        for iteration, loss in enumerate(losses[rank][:2], 1):
            step(proc, iteration, loss)
        proc.flush(1)  # a collective, before the checkpoint
        return proc.to_record()

    record = ranks.run(first_half)[0]  # rank 0's, the one written

    def second_half(rank):
        proc, _ = processor(reduce=ranks.reduce(rank), sync_every=2)
        proc.rank = rank
        proc.load_record(record)
        for iteration, loss in enumerate(losses[rank][2:], 3):
            step(proc, iteration, loss)
        return proc.end_epoch(Split.TRAIN, 1)

    assert ranks.run(second_half) == [expected, expected]
    assert expected == {"Loss": sum(sum(v) for v in losses.values()) / 8}


def test_a_metric_without_a_state_under_ranks_weighs_each_ranks_value_by_its_items():
    ranks = ThreadRanks(2)

    def run(rank):
        logger = InMemoryMetricLogger()
        proc = MetricsProcessor(
            [SplitMetrics(Split.VALID, [LastValue()], logger)],
            RecordingRenderer(),
            ranks.reduce(rank),
            rank=rank,
        )
        batches = [(5.0, 0, 3), (7.0, 0, 3)] if rank == 0 else [(1.0, 0, 1), NO_BATCH]
        for iteration, batch in enumerate(batches, 1):
            proc.process(Split.VALID, batch, *metadata(iteration))
        return proc.end_epoch(Split.VALID, 1)

    assert ranks.run(run) == [{"Last": (7.0 * 6 + 1.0 * 1) / 7}] * 2


def test_read_back_is_exact_for_every_dtype_mixed_in_one_stack():
    """One `stack` per device: float32 and bfloat16 values stay exact, and an integer too large
    for float32 (2**25 + 1) beside them is not rounded."""
    values = [
        torch.tensor(0.1, dtype=torch.float32),
        torch.tensor(0.1, dtype=torch.bfloat16),
        torch.tensor(2**25 + 1),
        torch.tensor(True),
        2.5,
    ]
    assert _to_host(values) == [
        float(torch.tensor(0.1, dtype=torch.float32)),
        float(torch.tensor(0.1, dtype=torch.bfloat16)),
        float(2**25 + 1),
        1.0,
        2.5,
    ]

"""MetricsProcessor: when entries are read back, how ranks are reduced, and mid-epoch records."""

from __future__ import annotations

import torch

from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric import LossInput, LossMetric, MetricMetadata, Progress
from burnish.train.processor import _MAX_PENDING, MetricsProcessor, SplitMetrics, _to_host
from burnish.train.renderer import MetricsRenderer, TrainingProgress
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
    # Another rank saw the same iterations with loss 3.0 on batches of 2.
    other = torch.tensor([[3.0 * 2, 2.0]], dtype=torch.float64)
    calls = []

    def reduce(table):
        calls.append(table.shape[0])
        return table + other.expand_as(table)

    proc, logger = processor(RecordingRenderer(due=True), reduce=reduce, sync_every=4)
    for iteration in range(1, 4):
        step(proc, iteration, 1.0)
    assert calls == [] and logged(logger) == []  # due renderer or not: every 4 iterations
    step(proc, 4, 1.0)
    assert calls == [4]
    assert logged(logger) == [((1.0 * 2 + 3.0 * 2) / 4, 4)] * 4
    assert proc.end_epoch(Split.TRAIN, 1) == {"Loss": 2.0}


def test_a_record_taken_mid_epoch_continues_exactly():
    losses = [0.5, 1.5, 2.5, 4.0, 7.0]
    uninterrupted, _ = processor()
    for iteration, loss in enumerate(losses, 1):
        step(uninterrupted, iteration, loss)
    expected = uninterrupted.end_epoch(Split.TRAIN, 1)

    first, logger = processor()
    for iteration, loss in enumerate(losses[:3], 1):
        step(first, iteration, loss)
    first.flush(1)
    record = first.to_record()
    assert record["train"]["totals"] == [[(0.5 + 1.5 + 2.5) * 2, 6.0]]

    resumed = MetricsProcessor(
        [SplitMetrics(Split.TRAIN, [LossMetric()], logger)], RecordingRenderer()
    )
    resumed.load_record(record)
    for iteration, loss in enumerate(losses[3:], 4):
        step(resumed, iteration, loss)
    assert resumed.end_epoch(Split.TRAIN, 1) == expected
    assert [value for value, _ in logged(logger)] == losses


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

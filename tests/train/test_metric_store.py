"""MetricStore: count-weighted epoch means, best-epoch search, caching, splits."""

import math

import pytest

from burnish.train.logger import FileMetricLogger, InMemoryMetricLogger
from burnish.train.metric.base import NumericEntry
from burnish.train.metric.store import (
    Aggregate,
    Direction,
    MetricStore,
    Split,
    aggregate_entries,
    metric_name,
)


def store_with(epochs, split=Split.TRAIN, name="Loss"):
    """A store whose `split` logger holds `epochs`: a list of [(value, count), ...] per epoch."""
    logger = InMemoryMetricLogger()
    for epoch, points in enumerate(epochs, start=1):
        logger.log(name, epoch, [NumericEntry(v, c) for v, c in points])
        logger.end_epoch(epoch)
    return MetricStore({split: logger})


def test_find_epoch_burns_example():
    # Burn's should_find_epoch: epoch means 750, 600, 10000.
    store = store_with([[(500.0, 1), (1000.0, 1)], [(200.0, 1), (1000.0, 1)], [(10000.0, 1)]])
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN) == 2
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.HIGHEST, Split.TRAIN) == 3
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID) is None
    assert store.find_epoch("Other", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN) is None


def test_epoch_value_is_weighted_by_batch_size():
    # Burn's should_aggregate_numeric_entry: (0.5 * 1 + 1.25 * 2) / 3 = 1.0, not 0.875.
    store = store_with([[(0.5, 1), (1.25, 2)]])
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 1.0
    points = [(0.3, 64), (0.7, 64), (0.1, 17)]
    expected = sum(v * c for v, c in points) / sum(c for _, c in points)
    store = store_with([points])
    assert math.isclose(store.find_metric("Loss", 1, "mean", "train"), expected, rel_tol=1e-15)
    assert store.find_metric("Loss", 2, Aggregate.MEAN, Split.TRAIN) is None
    assert aggregate_entries([], Aggregate.MEAN) is None


def test_ties_pick_the_earliest_epoch_and_nan_is_never_best():
    store = store_with([[(2.0, 1)], [(1.0, 1)], [(1.0, 1)], [(float("nan"), 1)]])
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN) == 2
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.HIGHEST, Split.TRAIN) == 1
    assert store.values("Loss", Aggregate.MEAN, Split.TRAIN)[:3] == [2.0, 1.0, 1.0]
    only_nan = store_with([[(float("nan"), 1)]])
    assert only_nan.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN) is None


def test_search_stops_at_the_first_epoch_without_values():
    logger = InMemoryMetricLogger()
    store = MetricStore({Split.VALID: logger})
    logger.log("Loss", 1, [NumericEntry(3.0, 1)])
    logger.log("Loss", 3, [NumericEntry(1.0, 1)])  # epoch 2 never validated
    assert store.find_epoch("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID) == 1


class CountingLogger(InMemoryMetricLogger):
    def __init__(self):
        super().__init__()
        self.reads = 0

    def read_numeric(self, name, epoch):
        self.reads += 1
        return super().read_numeric(name, epoch)


def test_open_epochs_are_read_fresh_closed_epochs_are_cached():
    logger = CountingLogger()
    store = MetricStore({"train": logger})
    logger.log("Loss", 1, [NumericEntry(4.0, 1)])  # the learner writes to its loggers directly
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 4.0
    logger.log("Loss", 1, [NumericEntry(2.0, 1)])
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 3.0  # epoch still open
    logger.end_epoch(1)
    reads = logger.reads
    for _ in range(3):
        assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 3.0
    assert logger.reads == reads + 1  # closed: read once, then cached


def test_truncation_refreshes_the_cache():
    logger = InMemoryMetricLogger()
    store = MetricStore({"train": logger})
    logger.log("Loss", 1, [NumericEntry(1.0, 1)])
    positions = logger.positions()
    logger.log("Loss", 1, [NumericEntry(3.0, 1)])
    logger.end_epoch(1)
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 2.0
    logger.truncate_to(positions)  # e.g. a resume dropping lines logged after a checkpoint
    logger.end_epoch(1)
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 1.0


def test_the_store_only_reads():
    store = MetricStore({"train": InMemoryMetricLogger()})
    for write in ("log", "end_epoch", "flush", "close", "invalidate"):
        assert not hasattr(store, write)


def test_splits_are_separate_and_the_first_logger_with_values_answers(tmp_path):
    empty, filled = InMemoryMetricLogger(), InMemoryMetricLogger()
    store = MetricStore({Split.TRAIN: [empty, filled], Split.VALID: InMemoryMetricLogger()})
    filled.log("Loss", 1, [NumericEntry(5.0, 1)])
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.TRAIN) == 5.0
    assert store.find_metric("Loss", 1, Aggregate.MEAN, Split.VALID) is None
    assert len(store.loggers("train")) == 2


def test_from_dir_reads_file_logs(tmp_path):
    for split, values in (("train", [3.0, 1.0]), ("valid", [2.0, 2.5])):
        logger = FileMetricLogger(tmp_path / split)
        for epoch, value in enumerate(values, start=1):
            logger.log("Accuracy", epoch, [NumericEntry(value, 8), NumericEntry(value + 1, 8)])
            logger.end_epoch(epoch)
    store = MetricStore.from_dir(tmp_path)
    assert store.find_metric("Accuracy", 2, Aggregate.MEAN, Split.TRAIN) == 1.5
    assert store.find_epoch("Accuracy", Aggregate.MEAN, Direction.HIGHEST, Split.VALID) == 2


def test_bad_arguments_are_named():
    store = MetricStore()
    with pytest.raises(ValueError, match=r"Split must be one of Split.TRAIN.*'validation'"):
        store.find_metric("Loss", 1, Aggregate.MEAN, "validation")
    with pytest.raises(ValueError, match=r"Direction must be one of.*'down'"):
        store.find_epoch("Loss", Aggregate.MEAN, "down", Split.TRAIN)
    with pytest.raises(ValueError, match=r"Aggregate must be one of.*'median'"):
        store.find_metric("Loss", 1, "median", Split.TRAIN)
    with pytest.raises(ValueError, match=r"`epoch` must be an int >= 1. Received: 0"):
        store.find_metric("Loss", 0, Aggregate.MEAN, Split.TRAIN)
    with pytest.raises(TypeError, match="`logger` must be a MetricLogger"):
        store.register_logger(Split.TRAIN, object())
    with pytest.raises(TypeError, match="`metric` must be a metric"):
        metric_name(3)


def test_metric_name_accepts_instances_names_and_burn_style_methods():
    class Named:
        name = "Accuracy"

    class BurnStyle:
        def name(self):
            return "Loss"

    assert metric_name(Named()) == "Accuracy"
    assert metric_name(BurnStyle()) == "Loss"
    assert metric_name("CPU Usage") == "CPU Usage"

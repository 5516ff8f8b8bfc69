"""Checkpointing strategies: closed-form action sequences over epochs (Burn's semantics)."""

import json

import pytest

from burnish.errors import RecordError
from burnish.train.checkpoint import (
    CheckpointingAction,
    ComposedCheckpointingStrategy,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    default_checkpointing_strategy,
)
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric.base import NumericEntry
from burnish.train.metric.store import Aggregate, Direction, MetricStore, Split

SAVE = CheckpointingAction.SAVE
DELETE = CheckpointingAction.DELETE


class Simulation:
    """A store fed one epoch at a time and the set of checkpoints the actions leave on disk."""

    def __init__(self, strategy, split=Split.VALID):
        self.strategy = strategy
        self.split = split
        self.logger = InMemoryMetricLogger()
        self.store = MetricStore({split: self.logger})
        self.epoch = 0
        self.kept = set()

    def epoch_end(self, *values, name="Loss"):
        self.epoch += 1
        entries = [NumericEntry(value, 2) for value in values]
        self.logger.log(name, self.epoch, entries)
        self.logger.end_epoch(self.epoch)
        actions = self.strategy.checkpointing(self.epoch, self.store)
        for action in actions:
            if action.is_save:
                assert self.epoch not in self.kept
                self.kept.add(self.epoch)
            else:
                assert action.epoch in self.kept, f"deletes missing checkpoint {action.epoch}"
                self.kept.remove(action.epoch)
        return actions


def test_keep_last_n():
    strategy = KeepLastNCheckpoints(2)
    actions = [strategy.checkpointing(epoch, MetricStore()) for epoch in range(1, 6)]
    assert actions == [[SAVE], [SAVE], [SAVE, DELETE(1)], [SAVE, DELETE(2)], [SAVE, DELETE(3)]]
    strategy = KeepLastNCheckpoints(1)
    assert strategy.checkpointing(1, None) == [SAVE]
    assert strategy.checkpointing(2, None) == [SAVE, DELETE(1)]


def test_metric_strategy_burns_example():
    # Burn's always_keep_the_best_epoch: train means 0.75, 0.4, 2.0.
    simulation = Simulation(
        MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.TRAIN),
        split=Split.TRAIN,
    )
    assert simulation.epoch_end(1.0, 0.5) == [SAVE]
    assert simulation.epoch_end(0.5, 0.3) == [DELETE(1), SAVE]
    assert simulation.epoch_end(1.0, 3.0) == []
    assert simulation.kept == {2}


def test_metric_strategy_highest_and_metric_instances():
    class Accuracy:
        name = "Accuracy"

    strategy = MetricCheckpointingStrategy(Accuracy(), "mean", "highest", "valid")
    simulation = Simulation(strategy)
    assert simulation.epoch_end(50.0, name="Accuracy") == [SAVE]
    assert simulation.epoch_end(70.0, name="Accuracy") == [DELETE(1), SAVE]
    assert simulation.epoch_end(60.0, name="Accuracy") == []
    assert simulation.kept == {2}


def test_metric_strategy_saves_while_the_metric_is_missing():
    strategy = MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
    store = MetricStore()
    assert strategy.checkpointing(1, store) == [SAVE]
    assert strategy.checkpointing(2, store) == [DELETE(1), SAVE]


def test_metric_strategy_with_nan_epochs():
    # NaN is never best. While every epoch so far is NaN there is no best: each epoch counts as
    # the best (saved, the previous one deleted), so a run always has a checkpoint to resume.
    strategy = MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID)
    simulation = Simulation(strategy)
    nan = float("nan")
    assert simulation.epoch_end(nan) == [SAVE]
    assert simulation.epoch_end(nan, nan) == [DELETE(1), SAVE]
    assert simulation.epoch_end(2.0) == [DELETE(2), SAVE]  # the first number is the best
    assert simulation.epoch_end(nan) == []  # a NaN epoch after it is not
    assert simulation.epoch_end(1.0, nan) == []  # one NaN batch makes the epoch NaN
    assert simulation.epoch_end(1.0) == [DELETE(3), SAVE]
    assert simulation.kept == {6}


def test_composed_deletes_only_when_every_strategy_agrees():
    # Burn's should_delete_when_both_deletes.
    strategy = (
        ComposedCheckpointingStrategy.builder()
        .add(KeepLastNCheckpoints(1))
        .add(KeepLastNCheckpoints(2))
        .build()
    )
    assert strategy.checkpointing(1, None) == [SAVE]
    assert strategy.checkpointing(2, None) == [SAVE]
    assert strategy.checkpointing(3, None) == [SAVE, DELETE(1)]
    assert strategy.checkpointing(4, None) == [SAVE, DELETE(2)]


LOSSES = [3.0, 1.0, 2.0, 2.5, 0.5, 4.0, 5.0, 0.4, 0.45, 6.0]


def test_default_keeps_the_last_two_and_the_best_valid_loss():
    simulation = Simulation(default_checkpointing_strategy())
    best = None
    for epoch, loss in enumerate(LOSSES, start=1):
        simulation.epoch_end(loss)
        best = epoch if best is None or loss < LOSSES[best - 1] else best
        assert simulation.kept == {epoch, epoch - 1, best} - {0}, f"epoch {epoch}"


def test_default_sequence_in_closed_form():
    simulation = Simulation(default_checkpointing_strategy())
    actions = [simulation.epoch_end(loss) for loss in LOSSES[:6]]  # 3, 1, 2, 2.5, 0.5, 4
    assert actions == [
        [SAVE],  # 1: best so far
        [SAVE],  # 2: new best; 1 is still one of the last two
        [SAVE, DELETE(1)],  # 3: 1 is neither recent nor best
        [SAVE],  # 4: 2 is no longer recent but is the best
        [SAVE, DELETE(3), DELETE(2)],  # 5: new best; 3 is old, 2 no longer best
        [SAVE, DELETE(4)],  # 6
    ]


def test_record_round_trip_resumes_the_same_decisions():
    first = Simulation(default_checkpointing_strategy())
    for loss in LOSSES[:4]:
        first.epoch_end(loss)
    record = first.strategy.to_record()
    # KeepLast2 already wants 2 gone, the metric strategy wants 3 and 4 gone; best is 2.
    assert record == {"deleted": [[2], [3, 4]], "strategies": [{}, {"current": 2}]}
    assert json.loads(json.dumps(record)) == record

    resumed = default_checkpointing_strategy()
    resumed.load_record(record)
    fresh = default_checkpointing_strategy()  # a resumed run that lost the record
    actions = {"first": [], "resumed": [], "fresh": []}
    for epoch, loss in enumerate(LOSSES[4:], start=5):
        first.logger.log("Loss", epoch, [NumericEntry(loss, 1)])
        actions["first"].append(first.strategy.checkpointing(epoch, first.store))
        actions["resumed"].append(resumed.checkpointing(epoch, first.store))
        actions["fresh"].append(fresh.checkpointing(epoch, first.store))
    assert actions["resumed"] == actions["first"]
    assert actions["first"][0] == [SAVE, DELETE(3), DELETE(2)]
    assert actions["fresh"][0] == [SAVE]  # would leak checkpoints 2, 3 and 4


def test_bad_input():
    with pytest.raises(ValueError, match=r"`num_keep` must be an int >= 1. Received: num_keep=0"):
        KeepLastNCheckpoints(0)
    with pytest.raises(TypeError, match="`metric` must be a metric"):
        MetricCheckpointingStrategy(None, Aggregate.MEAN, Direction.LOWEST, Split.VALID)
    with pytest.raises(ValueError, match="Split must be one of"):
        MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, "validation")
    with pytest.raises(ValueError, match="at least one CheckpointingStrategy"):
        ComposedCheckpointingStrategy.builder().build()
    with pytest.raises(TypeError, match="`strategy` must be a CheckpointingStrategy"):
        ComposedCheckpointingStrategy.builder().add("keep 2")
    with pytest.raises(ValueError, match=r"`epoch` must be an int >= 1"):
        KeepLastNCheckpoints(2).checkpointing(0, None)
    with pytest.raises(ValueError, match=r"DELETE\(epoch\)` with epoch >= 1"):
        DELETE(0)
    with pytest.raises(RecordError, match="record is for 1 strategies but this one has 2"):
        default_checkpointing_strategy().load_record({"deleted": [[]], "strategies": [{}]})
    with pytest.raises(RecordError, match="record must be a dict with `current`"):
        MetricCheckpointingStrategy("Loss", "mean", "lowest", "valid").load_record({})


def test_actions_read_like_burn():
    assert repr([SAVE, DELETE(3)]) == "[CheckpointingAction.SAVE, CheckpointingAction.DELETE(3)]"
    assert DELETE(3) == DELETE(3) and DELETE(3) != DELETE(4) and SAVE.is_save

"""MetricEarlyStoppingStrategy: Burn's cases, warm-up, direction and resume."""

import pytest

from burnish.errors import RecordError
from burnish.train.components.early_stopping import MetricEarlyStoppingStrategy, StoppingCondition
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric.base import NumericEntry
from burnish.train.metric.store import Aggregate, Direction, MetricStore, Split


def strategy(n_epochs, direction=Direction.LOWEST, warmup_epochs=None):
    return MetricEarlyStoppingStrategy(
        "Loss",
        Aggregate.MEAN,
        direction,
        Split.TRAIN,
        StoppingCondition.no_improvement_since(n_epochs),
        warmup_epochs=warmup_epochs,
    )


def decisions(early_stopping, epochs, logger=None, start=1):
    """Log each epoch's points, then ask `should_stop`; the answers in order."""
    logger = logger or InMemoryMetricLogger()
    store = MetricStore({Split.TRAIN: logger})
    answers = []
    for epoch, points in enumerate(epochs, start=start):
        logger.log("Loss", epoch, [NumericEntry(p, 1) for p in points])
        logger.end_epoch(epoch)
        answers.append(early_stopping.should_stop(epoch, store))
    return answers


def test_never_stops_while_improving():  # Burn's never_early_stop_while_it_is_improving
    epochs = [[0.5, 0.3], [0.4, 0.3], [0.3, 0.3], [0.2, 0.3]]
    assert decisions(strategy(1), epochs) == [False, False, False, False]


def test_stops_after_two_epochs_without_improvement():  # Burn's test with n_epochs=2
    epochs = [[1.0, 0.5], [0.5, 0.3], [1.0, 3.0], [1.0, 2.0]]
    assert decisions(strategy(2), epochs) == [False, False, False, True]


def test_equal_is_not_an_improvement():  # Burn's early_stop_when_stays_equal
    epochs = [[0.5, 0.3], [0.5, 0.3], [0.5, 0.3]]
    assert decisions(strategy(2), epochs) == [False, False, True]


def test_highest_direction():
    epochs = [[10.0], [20.0], [15.0], [20.0], [25.0], [1.0]]
    assert decisions(strategy(2, Direction.HIGHEST), epochs) == [
        False,
        False,
        False,
        True,
        False,
        False,
    ]


def test_warmup_tracks_the_best_but_never_stops():
    epochs = [[1.0], [2.0], [3.0], [4.0], [5.0]]
    assert decisions(strategy(1), epochs) == [False, True, True, True, True]
    assert decisions(strategy(1, warmup_epochs=3), epochs) == [False, False, False, True, True]
    with_builder = strategy(1).with_warmup_epochs(4)
    assert decisions(with_builder, epochs) == [False, False, False, False, True]
    assert with_builder.best_epoch == 1


def test_a_nan_epoch_is_no_improvement():
    nan = float("nan")
    assert decisions(strategy(2), [[nan], [nan], [nan]]) == [False, False, True]
    assert decisions(strategy(2), [[1.0], [nan], [nan, 0.1]]) == [False, False, True]


def test_missing_metric_never_stops():
    early_stopping = strategy(1)
    store = MetricStore({Split.TRAIN: InMemoryMetricLogger()})
    assert [early_stopping.should_stop(epoch, store) for epoch in (1, 2, 3)] == [False] * 3


def test_record_resume_matches_an_uninterrupted_run():
    epochs = [[1.0], [0.5], [0.7], [0.8], [0.9]]
    uninterrupted = decisions(strategy(3), epochs)
    assert uninterrupted == [False, False, False, False, True]

    logger = InMemoryMetricLogger()
    first = strategy(3)
    head = decisions(first, epochs[:2], logger)
    record = first.to_record()
    assert record == {"best_epoch": 2, "best_value": 0.5}
    resumed = strategy(3)
    resumed.load_record(record)
    assert head + decisions(resumed, epochs[2:], logger, start=3) == uninterrupted
    # Without the record, a resumed run would count from epoch 3's value and not stop.
    assert decisions(strategy(3), epochs[2:], InMemoryMetricLogger(), start=3)[-1] is False


def test_bad_input():
    with pytest.raises(ValueError, match=r"`n_epochs` must be an int >= 1. Received: n_epochs=0"):
        StoppingCondition.no_improvement_since(0)
    with pytest.raises(TypeError, match="`condition` must be a StoppingCondition"):
        MetricEarlyStoppingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, Split.VALID, 3)
    with pytest.raises(ValueError, match="Split must be one of"):
        strategy(1).__class__(
            "Loss", "mean", "lowest", "dev", StoppingCondition.no_improvement_since(1)
        )
    with pytest.raises(ValueError, match="`warmup_epochs` must be None or an int >= 0"):
        strategy(1, warmup_epochs=-1)
    with pytest.raises(RecordError, match="must be a dict with `best_epoch` and `best_value`"):
        strategy(1).load_record({"best": 1})
    with pytest.raises(ValueError, match=r"`epoch` must be an int >= 1"):
        strategy(1).should_stop(0, MetricStore())


def test_warmup_in_burns_idiom():
    # Burn: MetricEarlyStoppingStrategy::new(&LossMetric::new(), Aggregate::Mean,
    #     Direction::Lowest, Split::Train, StoppingCondition::NoImprovementSince { n_epochs: 1 })
    #     .with_warmup_epochs(Some(3)); then `strategy.warmup_epochs()`.
    from burnish.train.metric import LossMetric

    early_stopping = MetricEarlyStoppingStrategy(
        LossMetric(),
        Aggregate.MEAN,
        Direction.LOWEST,
        Split.TRAIN,
        StoppingCondition.no_improvement_since(n_epochs=1),
    )
    assert early_stopping.warmup_epochs() is None  # Burn's getter: None until set
    early_stopping = early_stopping.with_warmup_epochs(3)
    assert early_stopping.warmup_epochs() == 3
    epochs = [[1.0], [2.0], [3.0], [4.0]]
    assert decisions(early_stopping, epochs) == [False, False, False, True]
    assert early_stopping.with_warmup_epochs(None).warmup_epochs() is None

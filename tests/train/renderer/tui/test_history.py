import math

import pytest

from burnish.train.renderer import TrainingProgress
from burnish.train.renderer.tui.history import MetricHistory, Series
from burnish.train.renderer.tui.progress import ProgressEstimate, format_eta, training_fraction

from tests.train.renderer.helpers import FakeClock


def test_series_keeps_evenly_spaced_points_like_burn():
    # Burn's FullHistoryPlot test: 10 points max, 100 pushed -> every 16th point is kept.
    series = Series(10)
    for i in range(100):
        series.push(float(i), float(i))
    assert series.points == [(x, x) for x in (0.0, 16.0, 32.0, 48.0, 64.0, 80.0, 96.0)]
    series.clear()
    series.push(1.0, 2.0)
    assert series.points == [(1.0, 2.0)]


def test_series_stays_bounded():
    series = Series(250)
    for i in range(100_000):
        series.push(float(i), 0.0)
    assert 125 <= len(series.points) <= 250
    with pytest.raises(ValueError, match=r"`max_points` must be >= 2\. Received: max_points=1\."):
        Series(1)


def test_history_puts_both_splits_on_an_epoch_axis():
    history = MetricHistory()
    history.push("train", TrainingProgress(1, 3, 5, 50, 100), {"Loss": 2.0, "Accuracy": 10.0})
    history.push("train", TrainingProgress(2, 3, 1, 25, 100), {"Loss": 1.0})
    history.push("valid", TrainingProgress(1, 3, 1, 10, 20), {"Loss": 1.5, "Accuracy": math.nan})
    assert history.names == ["Loss", "Accuracy"]
    assert history.series("Loss") == {"train": [(0.5, 2.0), (1.25, 1.0)], "valid": [(0.5, 1.5)]}
    assert history.series("Accuracy") == {"train": [(0.5, 10.0)]}  # NaN skipped
    # Recent history: the current epoch only, x = fraction of the epoch.
    assert history.series("Loss", recent=True) == {"train": [(0.25, 1.0)], "valid": [(0.5, 1.5)]}


def test_training_fraction_counts_all_epochs():
    assert training_fraction(TrainingProgress(9, 10, 500, 5, 10)) == pytest.approx(0.85)
    assert training_fraction(TrainingProgress(1, 10, 0, 0, 0)) == 0.0


def test_eta_waits_for_warmup_then_extrapolates():
    clock = FakeClock()
    estimate = ProgressEstimate(clock)
    clock.now += 5.0
    estimate.update(TrainingProgress(1, 2, 20, 100, 1000))
    assert estimate.remaining_s() is None  # 10 iterations but only 5 s: still warming up
    clock.now += 6.0
    estimate.update(TrainingProgress(1, 2, 30, 200, 1000))  # warm: timing starts at 10% done
    clock.now += 10.0
    estimate.update(TrainingProgress(1, 2, 80, 400, 1000))  # 20% now: 10% of the run in 10 s
    assert estimate.fraction == pytest.approx(0.2)
    assert estimate.remaining_s() == pytest.approx(80.0)


def test_eta_starts_after_30_s_even_with_few_iterations():
    clock = FakeClock()
    estimate = ProgressEstimate(clock)
    clock.now += 31.0
    estimate.update(TrainingProgress(1, 1, 2, 1, 4))
    clock.now += 1.0
    estimate.update(TrainingProgress(1, 1, 3, 2, 4))
    assert estimate.remaining_s() == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [  # Burn's test values, then ours.
        (55, "55 secs"),
        (61, "1 min"),
        (122, "2 mins"),
        (3601, "1 hour"),
        (7202, "2 hours"),
        (86424, "1 day"),
        (172848, "2 days"),
        (0.4, "1 sec"),
        (None, "---"),
    ],
)
def test_format_eta(seconds, text):
    assert format_eta(seconds) == text

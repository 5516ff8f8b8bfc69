"""The range test's curve: smoothing, divergence, steepest descent — on fixed curves against
hand computations, and total over any floats (empty, one point, constant, NaN/inf, tiny, huge)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.tune.loss_curve import divergence_index, smooth_losses, steepest_descent_index

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
BETA = st.floats(min_value=0.0, max_value=1.0, exclude_max=True)
CURVE = st.lists(ANY_FLOAT, max_size=60)


def reference_smoothing(losses: list[float], beta: float) -> list[float]:
    """The textbook formula, step by step (Lightning's callback, with the bias correction
    counted from the first point)."""
    average, out = 0.0, []
    for k, loss in enumerate(losses):
        average = beta * average + (1 - beta) * loss
        out.append(average / (1 - beta ** (k + 1)))
    return out


def test_smoothing_matches_the_formula_on_a_real_looking_curve():
    losses = [2.31, 2.29, 2.30, 2.10, 1.85, 1.60, 1.52, 1.70, 2.60, 7.90]
    assert smooth_losses(losses, 0.98) == pytest.approx(reference_smoothing(losses, 0.98))
    assert smooth_losses(losses, 0.5) == pytest.approx(reference_smoothing(losses, 0.5))
    assert smooth_losses(losses, 0.0) == losses  # no smoothing: the losses themselves


def test_divergence_is_four_times_the_best_by_default():
    # best 1.0 at index 2; 4.0 is not above 4 x best, 4.5 is.
    assert divergence_index([2.0, 1.5, 1.0, 3.9, 4.0, 4.5, 1.0]) == 5
    assert divergence_index([2.0, 1.5, 1.0, 3.9, 4.0, 4.5], threshold=5.0) is None
    assert divergence_index([2.0, math.nan, 1.0], threshold=None) == 1
    assert divergence_index([9.0, 1.0]) is None  # the first point has no best before it
    # A negative best: "4 times" is measured from it by its size, not by the sign flipping.
    assert divergence_index([-1.0, -2.0, 3.9]) is None
    assert divergence_index([-1.0, -2.0, 4.1]) == 2


def test_the_steepest_descent_against_numpy_on_a_log_axis():
    lrs = [10.0 ** (-6 + k / 4) for k in range(25)]
    smoothed = [2.3 - 2.0 / (1 + math.exp(-(k - 14) / 1.5)) for k in range(25)]
    slopes = np.gradient(np.array(smoothed[10:24]), np.log(np.array(lrs[10:24])))
    expected = 10 + int(np.argmin(slopes))
    assert steepest_descent_index(lrs, smoothed) == expected == 14  # the sigmoid's middle
    assert steepest_descent_index(lrs, smoothed, skip_begin=15) == 15  # past the middle
    assert steepest_descent_index(lrs, [1.0] * 25) is None  # flat: no descent
    assert steepest_descent_index(lrs, [float(k) for k in range(25)]) is None  # rising
    # A NaN point is left out; its neighbours' slope spans it.
    holed = [*smoothed[:14], math.nan, *smoothed[15:]]
    assert steepest_descent_index(lrs, holed) in (13, 15)


@settings(max_examples=300, deadline=None)
@given(CURVE, BETA)
def test_smoothing_is_total_and_stays_between_the_losses(losses, beta):
    smoothed = smooth_losses(losses, beta)
    assert len(smoothed) == len(losses)
    broken = next((k for k, x in enumerate(losses) if not math.isfinite(x)), len(losses))
    assert all(math.isnan(x) for x in smoothed[broken:])
    for k in range(broken):
        seen = losses[: k + 1]
        assert min(seen) <= smoothed[k] <= max(seen)  # a weighted mean of the losses so far
    if broken:
        assert smoothed[0] == losses[0]


@settings(max_examples=100, deadline=None)
@given(FINITE, st.integers(0, 50), BETA)
def test_a_constant_curve_smooths_to_itself(value, length, beta):
    assert smooth_losses([value] * length, beta) == [value] * length


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=40), BETA)
def test_smoothing_of_ordinary_values_equals_the_formula(losses, beta):
    assert smooth_losses(losses, beta) == pytest.approx(reference_smoothing(losses, beta), rel=1e-9)


@settings(max_examples=300, deadline=None)
@given(CURVE, st.none() | st.floats(1.0, 1e6, exclude_min=True))
def test_divergence_is_total_and_the_first_point_that_breaks_the_rule(smoothed, threshold):
    index = divergence_index(smoothed, threshold)
    finite_prefix = next((k for k, x in enumerate(smoothed) if not math.isfinite(x)), None)
    if index is None:
        assert finite_prefix is None
        return
    assert 0 <= index < len(smoothed)
    if finite_prefix is not None:
        assert index <= finite_prefix
    if index != finite_prefix:  # diverged by the threshold rule, from the 2nd point on
        assert threshold is not None and index > 0
        best = min(smoothed[:index])
        assert smoothed[index] - best > (threshold - 1) * abs(best)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(1e-300, 1e300), ANY_FLOAT), max_size=60),
    st.integers(0, 12),
    st.integers(0, 3),
)
def test_the_suggestion_is_total_over_any_curve(points, skip_begin, skip_end):
    lrs = sorted({lr for lr, _ in points})
    smoothed = [y for _, y in points][: len(lrs)]
    lrs = lrs[: len(smoothed)]
    index = steepest_descent_index(lrs, smoothed, skip_begin, skip_end)
    if index is not None:
        assert skip_begin <= index < len(lrs) - skip_end
        assert math.isfinite(smoothed[index])


@settings(max_examples=100, deadline=None)
@given(st.lists(FINITE, min_size=2, max_size=40), st.integers(-1000, 1000))
def test_the_suggestion_does_not_depend_on_the_loss_scale(smoothed, exponent):
    """Scaling every loss by a power of two (exact) moves no slope's rank: huge and tiny
    curves give the same point as ordinary ones."""
    lrs = [10.0 ** (-8 + k / 5) for k in range(len(smoothed))]
    scaled = [y * 2.0**exponent for y in smoothed]
    if not all(math.isfinite(y) and (y == 0) == (x == 0) for x, y in zip(smoothed, scaled)):
        return  # the scaling itself overflowed or underflowed
    assert steepest_descent_index(lrs, scaled, 0, 0) == steepest_descent_index(lrs, smoothed, 0, 0)


def test_empty_one_point_and_bad_beta():
    assert smooth_losses([]) == [] and divergence_index([]) is None
    assert steepest_descent_index([], []) is None
    assert steepest_descent_index([1e-3], [2.0], 0, 0) is None
    assert smooth_losses([5.0]) == [5.0]
    for beta in (1.0, -0.1, math.nan, True, "0.9"):
        with pytest.raises(ValueError, match=r"`beta` \(the loss smoothing\) must be"):
            smooth_losses([1.0], beta)  # type: ignore[arg-type]

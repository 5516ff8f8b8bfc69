"""`LrFinderResult`: its checks, its record and `lr_finder.json` (non-finite losses as null),
and a reader that turns any JSON into either a result or one `RecordError`."""

from __future__ import annotations

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.errors import RecordError
from burnish.tune import LR_FINDER_FILE, LrFinderResult, exponential_lrs


def diverged_result() -> LrFinderResult:
    lrs = exponential_lrs(1e-6, 1.0, 30)[:24]
    losses = [2.3 - 1.5 / (1 + math.exp(-(k - 14) / 2)) for k in range(23)] + [math.inf]
    return LrFinderResult(lrs, losses, 0.9, 4.0, num_iterations=30)


def test_a_result_round_trips_through_its_json_file(tmp_path):
    result = diverged_result()
    path = result.save(tmp_path / "run" / LR_FINDER_FILE)  # the directory is made
    text = path.read_text()
    assert "Infinity" not in text and "NaN" not in text  # plain JSON: null instead
    record = json.loads(text)
    assert record["losses"][-1] is None and record["smoothed"][-1] is None
    assert record["suggestion"] == result.suggestion()
    loaded = LrFinderResult.load(path)
    assert loaded.lrs == result.lrs and loaded.num_iterations == 30 and loaded.beta == 0.9
    assert loaded.losses[:-1] == result.losses[:-1] and math.isnan(loaded.losses[-1])
    assert loaded.suggestion() == result.suggestion() is not None
    assert loaded.stopped_early and not LrFinderResult([1.0], [1.0]).stopped_early


def test_a_failed_write_leaves_the_previous_file(tmp_path, monkeypatch):
    path = diverged_result().save(tmp_path / LR_FINDER_FILE)
    before = path.read_bytes()

    def full_disk(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("os.fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        LrFinderResult([1e-3, 1e-2], [1.0, 0.5]).save(path)
    assert path.read_bytes() == before and sorted(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"lrs": [1e-3, 1e-2], "losses": [1.0]}, ValueError, r"as long \(one loss per rate\)"),
        ({"lrs": [1e-2, 1e-3], "losses": [1.0, 2.0]}, ValueError, r"increasing.*lrs\[1\]"),
        ({"lrs": [0.0, 1e-3], "losses": [1.0, 2.0]}, ValueError, "positive"),
        ({"lrs": [1e-3, math.inf], "losses": [1.0, 2.0]}, ValueError, "finite"),
        ({"lrs": "abc", "losses": []}, TypeError, "sequence of numbers"),
        ({"lrs": [1e-3], "losses": ["x"]}, TypeError, "must hold numbers"),
        ({"lrs": [1e-3], "losses": [1.0], "beta": 1.0}, ValueError, r"in \[0, 1\)"),
        ({"lrs": [1e-3], "losses": [1.0], "early_stop_threshold": 1.0}, ValueError, "> 1"),
        ({"lrs": [1e-3], "losses": [1.0], "num_iterations": 0}, ValueError, "at least"),
    ],
)
def test_bad_values_are_named(kwargs, error, match):
    with pytest.raises(error, match=match):
        LrFinderResult(**kwargs)


def test_bad_skips_are_named():
    with pytest.raises(ValueError, match=r"`skip_end` must be an int >= 0. Received: skip_end=-1"):
        diverged_result().suggestion(skip_end=-1)


def test_records_of_other_things_are_refused_by_name(tmp_path):
    with pytest.raises(RecordError, match=r'"format": "burnish\.lr_finder"'):
        LrFinderResult.from_record({"lrs": [], "losses": []})
    record = diverged_result().to_record()
    with pytest.raises(RecordError, match="version 2; this burnish reads version 1"):
        LrFinderResult.from_record({**record, "version": 2})
    with pytest.raises(RecordError, match=r'"lrs" must be a list'):
        LrFinderResult.from_record({**record, "lrs": None})
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(RecordError, match="is not valid JSON"):
        LrFinderResult.load(tmp_path / "bad.json")


JSON = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(JSON, st.dictionaries(st.sampled_from(["lrs", "losses", "beta", "num_iterations",
                                              "early_stop_threshold"]), JSON))  # fmt: skip
def test_any_json_reads_as_a_result_or_one_record_error(anything, overrides):
    for record in (anything, {**diverged_result().to_record(), **overrides}):
        try:
            result = LrFinderResult.from_record(record)
        except RecordError:
            continue
        assert len(result.lrs) == len(result.losses) == len(result.smoothed)
        result.suggestion()  # total


@settings(max_examples=200, deadline=None)
@given(
    st.floats(1e-300, 1e300),
    st.floats(1.0, 1e300, exclude_min=True),
    st.integers(2, 400),
)
def test_exponential_rates_run_from_min_to_max_or_are_refused(min_lr, factor, count):
    max_lr = min_lr * factor
    if not math.isfinite(max_lr) or max_lr <= min_lr:
        return
    try:
        lrs = exponential_lrs(min_lr, max_lr, count)
    except ValueError as error:
        assert "too close" in str(error)
        return
    assert len(lrs) == count and lrs[0] == min_lr and lrs[-1] == max_lr
    assert all(a < b for a, b in itertools.pairwise(lrs))
    expected = [min_lr * (max_lr / min_lr) ** (k / (count - 1)) for k in range(count)]
    if math.isfinite(max_lr / min_lr):
        assert lrs == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.0, 1.0, 10), r"0 < min_lr < max_lr.*min_lr=0.0"),
        ((1.0, 1.0, 10), r"0 < min_lr < max_lr"),
        ((1e-8, math.nan, 10), r"finite"),
        ((1e-8, 1.0, 1), r"`num_iterations` must be >= 2"),
        ((1e-8, 1.0, 2.5), r"`num_iterations` must be an int"),
        ((1.0, 1.0 + 2e-16, 100), r"too close for 100 distinct rates"),
    ],
)
def test_bad_sweep_settings_are_named(args, match):
    with pytest.raises(ValueError, match=match):
        exponential_lrs(*args)

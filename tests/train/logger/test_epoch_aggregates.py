"""The per-epoch aggregates file (epoch values beside Burn's logs): total on any input."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.logger.epoch_aggregates import (
    EntryStats,
    MetricAggregate,
    decode_aggregates,
    encode_aggregates,
)


def test_a_deeply_nested_aggregates_file_is_an_input_error():
    import pytest

    from burnish.train.logger.epoch_aggregates import decode_aggregates

    with pytest.raises(ValueError, match="not a burnish epoch aggregates file"):
        decode_aggregates(b"[" * 200_000 + b"]" * 200_000, "deep.json")


finite_or_not = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(finite_or_not, st.integers(0, 10**6)), max_size=30))
def test_entry_stats_never_crash_and_leave_nan_entries_out(entries):
    stats = EntryStats.of(entries)
    defined = [(v, c) for v, c in entries if not math.isnan(v)]
    assert stats.lines == len(entries)
    assert stats.count == sum(c for _, c in defined)
    aggregate = stats.aggregate(1.0)
    if defined:
        assert aggregate.min == min(v for v, _ in defined)
        assert aggregate.max == max(v for v, _ in defined)
    else:
        assert math.isnan(aggregate.min) and math.isnan(aggregate.max)


@settings(max_examples=150, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=20),
        st.tuples(
            finite_or_not,
            finite_or_not,
            finite_or_not,
            finite_or_not,
            st.integers(0, 2**53),
            st.integers(0, 2**53),
        ),
        max_size=5,
    ),
    st.integers(1, 10**6),
)
def test_aggregates_round_trip_any_value(metrics, epoch):
    """Empty, one-value, NaN/inf, tiny and huge values survive the file exactly."""
    aggregates = {name: MetricAggregate(*fields) for name, fields in metrics.items()}
    decoded = decode_aggregates(encode_aggregates(epoch, aggregates))
    assert list(decoded) == list(aggregates)
    for name, aggregate in aggregates.items():
        for field in ("value", "mean", "min", "max", "count", "lines"):
            expected, actual = getattr(aggregate, field), getattr(decoded[name], field)
            assert expected == actual or (math.isnan(expected) and math.isnan(actual)), field

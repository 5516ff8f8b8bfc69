"""The block-wise NumPy reader of metric logs equals a line-by-line reference on any log."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.logger.base import DamagedLogError
from burnish.train.logger.epoch_aggregates import EntryStats
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.numeric_lines import (
    count_entries,
    count_lines,
    entry_stats,
    line_offset,
    mean_of_entries,
    read_chunks,
)
from burnish.train.metric.base import NumericEntry

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
COUNTS = st.integers(min_value=0, max_value=10**12)
NUMERIC_LINE = st.one_of(
    st.builds(lambda v, c: f"{v!r},{c}", FLOATS, COUNTS),  # what burnish writes
    st.builds(lambda v: f"{v!r}", FLOATS),  # a lone value (count 1)
    st.builds(lambda v, c: f" {v!r},{c}\r", FLOATS, COUNTS),  # spaces, a CRLF file
    st.builds(lambda v, c: f"{v:.3e},+{c}", FLOATS, COUNTS),  # other spellings int() reads
    st.just(""),  # an empty line
)


def naive(text: bytes) -> list[tuple[float, int]]:
    """The reference: every complete non-empty line through `NumericEntry.deserialize`."""
    lines = text.decode("utf-8", errors="replace").split("\n")[:-1]
    entries = [NumericEntry.deserialize(line) for line in lines if line]
    return [(float(e.value), e.count) for e in entries]


def pairs(path, chunk_bytes: int) -> list[tuple[float, int]]:
    found = []
    for values, counts in read_chunks(path, chunk_bytes):
        assert values.dtype == np.float64 and counts.dtype == np.int64
        found += zip(values.tolist(), counts.tolist())
    return found


def same(a: list[tuple[float, int]], b: list[tuple[float, int]]) -> bool:
    return len(a) == len(b) and all(
        (x == y or (math.isnan(x) and math.isnan(y))) and m == n for (x, m), (y, n) in zip(a, b)
    )


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(NUMERIC_LINE, max_size=60),
    tail=st.sampled_from(["", "0.5", "0.25,3", "1e-"]),  # a last line a crash cut short
    chunk_bytes=st.sampled_from([1, 7, 64, 1 << 20]),
)
def test_read_chunks_equals_a_line_by_line_reader(tmp_path_factory, lines, tail, chunk_bytes):
    path = tmp_path_factory.mktemp("log") / "Loss.log"
    text = ("".join(line + "\n" for line in lines) + tail).encode()
    path.write_bytes(text)
    expected = naive(text)
    assert same(pairs(path, chunk_bytes), expected)
    assert count_entries(path, chunk_bytes) == len(expected)
    assert count_lines(path, chunk_bytes) == text.count(b"\n")
    stats = entry_stats(read_chunks(path, chunk_bytes))
    reference = EntryStats.of(expected)
    assert (stats.lines, stats.count) == (reference.lines, reference.count)
    for field in ("total", "min", "max"):
        assert_close(getattr(stats, field), getattr(reference, field))
    mean, found = mean_of_entries(read_chunks(path, chunk_bytes))
    total, count = sum(v * c for v, c in expected), sum(c for _, c in expected)
    assert found == len(expected)
    if count:
        assert mean is not None
        assert_close(mean, total / count)
    else:
        assert mean is None


def assert_close(found: float, expected: float) -> None:
    if math.isnan(expected) or math.isinf(expected):
        # A sum of huge terms may overflow in one order and not the other: both are "no
        # finite value"; anything finite must agree.
        assert not math.isfinite(found) or math.isnan(expected)
        return
    assert found == pytest.approx(expected, rel=1e-9, abs=1e-300) or not math.isfinite(found)


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(st.builds(lambda v: f"{v!r},1", FLOATS), max_size=20),
    bad=st.sampled_from(["accuracy: 0.5", "0.5,1.5", "nan(1),2", "1,2,3", ",3", "0.5,"]),
    chunk_bytes=st.sampled_from([3, 64, 1 << 20]),
)
def test_a_bad_line_raises_what_the_line_by_line_reader_says(
    tmp_path_factory, before, bad, chunk_bytes
):
    path = tmp_path_factory.mktemp("log") / "Loss.log"
    path.write_bytes("".join(line + "\n" for line in [*before, bad, "0.5,1"]).encode())
    kind = DamagedLogError if before else ValueError
    with pytest.raises(kind, match=f"Line {len(before) + 1} of .*Loss.log"):
        pairs(path, chunk_bytes)
    if not before:  # a text metric: an error, not a damaged log
        with pytest.raises(ValueError) as error:
            pairs(path, chunk_bytes)
        assert not isinstance(error.value, DamagedLogError)


def test_a_missing_file_has_no_entries(tmp_path):
    path = tmp_path / "Missing.log"
    assert pairs(path, 64) == [] and count_entries(path) == 0 and count_lines(path) == 0


@settings(max_examples=60, deadline=None)
@given(
    lines=st.integers(min_value=0, max_value=40),
    keep=st.integers(min_value=0, max_value=45),
    chunk_bytes=st.sampled_from([1, 5, 1 << 20]),
)
def test_line_offset_is_after_the_nth_newline(tmp_path_factory, lines, keep, chunk_bytes):
    path = tmp_path_factory.mktemp("log") / "Loss.log"
    text = "".join(f"{i * 0.5},{i}\n" for i in range(lines)).encode() + b"0.1"
    path.write_bytes(text)
    expected = [m.end() for m in re.finditer(b"\n", text)]
    found = line_offset(path, keep, chunk_bytes)
    if keep == 0:
        assert found == 0
    elif keep > lines:
        assert found is None
    else:
        assert found == expected[keep - 1]


@settings(max_examples=40, deadline=None)
@given(
    first=st.lists(FLOATS, min_size=1, max_size=30),
    committed=st.integers(min_value=0, max_value=30),
    after=st.lists(FLOATS, max_size=30),
)
def test_a_resumed_log_reads_back_what_the_resumed_run_kept(
    tmp_path_factory, first, committed, after
):
    """Log, take positions part-way, crash (lines after them), truncate, log more: the
    streaming reader gives exactly the committed lines then the new ones."""
    directory = tmp_path_factory.mktemp("run") / "train"
    committed = min(committed, len(first))
    logger = FileMetricLogger(directory, max_buffered_lines=4)
    logger.log("Loss", 1, [NumericEntry(v, 2) for v in first[:committed]])
    positions = logger.positions()
    logger.log("Loss", 1, [NumericEntry(v, 2) for v in first[committed:]])
    logger.close()
    with open(logger.file_path("Loss", 1), "ab") as file:
        file.write(b"0.12")  # a write cut short
    resumed = FileMetricLogger(directory, max_buffered_lines=4)
    resumed.truncate_to(positions)
    resumed.log("Loss", 1, [NumericEntry(v, 3) for v in after])
    expected = [(v, 2) for v in first[:committed]] + [(v, 3) for v in after]
    assert same([(float(e.value), e.count) for e in resumed.read_numeric("Loss", 1)], expected)
    resumed.end_epoch(1)
    assert same(pairs(resumed.file_path("Loss", 1), 16), expected)

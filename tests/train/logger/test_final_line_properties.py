"""Property tests of the `value,final` line's writer and readers (Burn main's format)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.logger.numeric_lines import count_entries, read_chunks, read_final
from burnish.train.metric import NumericEntry
from burnish.train.metric.numeric_text import display_f64

from tests.fixtures.burn_main_run_writer import rust_display

any_float = st.floats(allow_nan=True, allow_infinity=True)
entries = st.lists(st.tuples(any_float, st.integers(0, 2**40)), max_size=30)


@given(any_float)
def test_display_f64_reads_back_and_matches_rusts_rules(value):
    text = display_f64(value)
    assert "e" not in text.lower().replace("nan", "")
    assert text == rust_display(value)
    back = float(text)
    assert back == value or (math.isnan(back) and math.isnan(value))
    assert math.copysign(1.0, back) == math.copysign(1.0, value) or math.isnan(value)


@settings(max_examples=60, deadline=None)
@given(entries, st.none() | any_float, st.sampled_from([1, 7, 64, 1 << 20]))
def test_readers_leave_the_final_line_out_and_read_it(tmp_path_factory, lines, final, chunk):
    path = tmp_path_factory.mktemp("log") / "Loss.log"
    text = "".join(NumericEntry(v, c).serialize() + "\n" for v, c in lines)
    if final is not None:
        text += NumericEntry(final, 0, final=True).serialize() + "\n"
    path.write_text(text)
    read = [(v, c) for values, counts in read_chunks(path, chunk) for v, c in zip(values, counts)]
    assert len(read) == len(lines) == count_entries(path, chunk)
    for (value, count), (expected, size) in zip(read, lines):
        assert count == size and (value == expected or (math.isnan(value) and math.isnan(expected)))
    got = read_final(path, tail_bytes=chunk)
    if final is None:
        assert got is None
    else:
        assert got == final or (math.isnan(got) and math.isnan(final))


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=200))
def test_read_final_never_hangs_or_crashes_on_any_bytes(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("log") / "x.log"
    path.write_bytes(data)
    try:
        value = read_final(path, tail_bytes=8)
    except ValueError as error:
        assert "is not a final entry" in str(error)
    else:
        assert value is None or isinstance(value, float)


def test_empty_missing_and_cut_short_logs_have_no_final_line(tmp_path):
    assert read_final(tmp_path / "missing.log") is None
    (tmp_path / "empty.log").write_text("")
    assert read_final(tmp_path / "empty.log") is None
    (tmp_path / "cut.log").write_text("1,2\n3,fin")  # a write a crash cut short
    assert read_final(tmp_path / "cut.log") is None
    (tmp_path / "blank.log").write_text("1,2\n2.5,final\n\n\n")  # Burn skips empty lines
    assert read_final(tmp_path / "blank.log") == 2.5
    (tmp_path / "long.log").write_text("1," + "1" * 9000 + "\n" + "0." + "0" * 9000 + "1,final\n")
    assert read_final(tmp_path / "long.log", tail_bytes=16) == 0.0  # underflows, as in Rust


@pytest.mark.parametrize(
    "line", ["abc,final", ",final", "1,Final", "1,final,2", "1,-3", "N/A", "1;2"]
)
def test_malformed_lines_raise_a_clear_error(tmp_path, line):
    path = tmp_path / "Loss.log"
    path.write_text(f"1,2\n{line}\n")
    with pytest.raises(ValueError, match=r"Line 2 of .*Loss.log is not a numeric entry"):
        list(read_chunks(path))
    with pytest.raises(ValueError, match=r"must be `value,count`.*`value,final`"):
        NumericEntry.deserialize(line)


def test_a_final_line_inside_the_log_is_skipped_not_averaged(tmp_path):
    path = tmp_path / "Loss.log"
    path.write_text("1,2\n100,final\n3,2\n")  # Burn panics (`unreachable!`); burnish skips it
    assert [c.tolist() for c in next(read_chunks(path))] == [[1.0, 3.0], [2, 2]]
    assert read_final(path) is None

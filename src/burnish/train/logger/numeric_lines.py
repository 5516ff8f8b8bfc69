"""Reading Burn's per-iteration metric logs (`value,count` a line) in constant memory.

Burn main ends each epoch's log with the metric's epoch value, `value,final`
(`NumericEntry::Final`); so does burnish. That line is no iteration: `read_chunks` and
`count_entries` leave it out, and `read_final` reads it (from the file's end: Burn takes it
only when it is the last line, `NumericMetricsAggregate::aggregate`).

A log is read in blocks of `CHUNK_BYTES`; each block's complete lines are parsed at once by
NumPy into two arrays (values, counts), so memory does not grow with the number of lines and no
Python object is made per value. A block of well-formed `value,count` lines is parsed by
`np.fromstring`; anything else (a lone `value` line, spaces, a text metric, a damaged line)
falls back to `NumericEntry.deserialize` line by line for that block, which parses what it can
and raises the error a line-by-line reader would, with the line's number.

An unterminated last line (a write cut short by a crash) is ignored; empty lines are skipped.

Nothing here imports torch: `burnish summary` and `burnish report` read logs without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from burnish.train.logger.base import DamagedLogError
from burnish.train.logger.epoch_aggregates import EntryStats
from burnish.train.metric.base import NumericEntry
from burnish.train.metric.numeric_text import FINAL_TAG

__all__ = [
    "CHUNK_BYTES",
    "Chunk",
    "count_entries",
    "count_lines",
    "entry_stats",
    "line_offset",
    "mean_of_entries",
    "read_chunks",
    "read_final",
]

CHUNK_BYTES = 1 << 20
"""The bytes read at a time: memory per reader is a few times this, whatever the file's size."""

Chunk = tuple[np.ndarray, np.ndarray]
"""A block's entries: `(values, counts)`, float64 and int64 arrays of the same length."""

_COMMA, _NEWLINE = ord(","), ord("\n")
_COMMA_TO_SPACE = bytes.maketrans(b",", b" ")
_OTHER_BYTES = np.ones(256, dtype=bool)  # bytes that are neither digits nor separators
_OTHER_BYTES[list(b"0123456789,\n")] = False
# Bytes the fast path leaves to the line-by-line parser: whitespace that `float()` strips but
# `np.fromstring` treats as a separator, and `(` (`nan(1)`, which only NumPy accepts).
_SLOW_BYTES = (b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"(")


def read_chunks(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """The entries of the log at `path`, a block of lines at a time (none if it is missing).

    Raises:
        ValueError: if a line is not a numeric entry (a text metric's log), naming the file
            and line; `DamagedLogError` when numeric lines came before it.
    """
    path = Path(path)
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, also when the caller stops early
    except FileNotFoundError:
        return
    with file:
        carry = b""
        lines_before = 0
        seen = False  # whether an entry came before (a bad line then means a damaged log)
        while block := file.read(chunk_bytes):
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            data, carry = data[:cut], data[cut:]
            if not data:
                continue
            values, counts = _parse(data, path, lines_before, seen)
            lines_before += data.count(b"\n")
            if values.size:
                seen = True
                yield values, counts


def _parse(data: bytes, path: Path, lines_before: int, seen: bool) -> Chunk:
    """The iteration entries of `data`, complete lines (it ends with a newline)."""
    body = _without_final_line(data)
    if not body.strip(b"\n"):
        return np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int64)
    fast = None if _FINAL in body else _parse_fast(body)
    return fast if fast is not None else _parse_slowly(data, path, lines_before, seen)


_FINAL = b"," + FINAL_TAG.encode()


def _without_final_line(data: bytes) -> bytes:
    """`data` without its last line if that is a well-formed `value,final` line."""
    start = data.rfind(b"\n", 0, len(data) - 1) + 1
    last = data[start:-1]
    if not last.endswith(_FINAL):
        return data
    try:
        float(last[: -len(_FINAL)])
    except ValueError:  # left to the line-by-line parser, which names the line
        return data
    return data[:start]


def _parse_fast(data: bytes) -> Chunk | None:
    """`data` parsed by NumPy if every non-empty line is `<number>,<digits>`; else None."""
    if any(byte in data for byte in _SLOW_BYTES):
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    newlines = np.flatnonzero(raw == _NEWLINE)
    starts = np.empty_like(newlines)
    starts[0] = 0
    starts[1:] = newlines[:-1] + 1
    full = newlines > starts  # non-empty lines
    ends, starts = newlines[full], starts[full]
    commas = np.flatnonzero(raw == _COMMA)
    # One comma per line, neither at its start nor right before its end.
    if commas.size != ends.size or np.any(commas <= starts) or np.any(commas >= ends - 1):
        return None
    # The count field (after the comma) holds digits only, as `int()` reads it: every other
    # byte lies before its line's comma.
    others = np.flatnonzero(_OTHER_BYTES[raw])
    if others.size and np.any(others > commas[np.searchsorted(ends, others)]):
        return None
    try:
        numbers = np.fromstring(data.translate(_COMMA_TO_SPACE), dtype=np.float64, sep=" ")
    except ValueError:  # a token NumPy does not read as a number
        return None
    if numbers.size != 2 * ends.size:
        return None
    counts = numbers[1::2]
    if counts.size and counts.max() >= 2.0**53:  # beyond exact float integers: int() it
        return None
    return numbers[0::2].copy(), counts.astype(np.int64)


def _parse_slowly(data: bytes, path: Path, lines_before: int, seen: bool) -> Chunk:
    """`data` parsed line by line, raising at the first line that is not a numeric entry."""
    values: list[float] = []
    counts: list[int] = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=lines_before + 1):
        if not raw:
            continue
        line = raw.decode("utf-8", errors="replace")
        try:
            entry = NumericEntry.deserialize(line)
        except (ValueError, TypeError) as error:
            kind = DamagedLogError if seen or values else ValueError  # numeric lines came before
            raise kind(
                f"Line {number} of {path} is not a numeric entry ('value,count'): {line!r} "
                f"({error}). Only numeric metrics can be read back; check the metric name."
            ) from error
        if entry.final:  # the epoch's value, not an iteration (see `read_final`)
            continue
        values.append(float(entry.value))
        counts.append(entry.count)
    return np.array(values, dtype=np.float64), np.array(counts, dtype=np.int64)


def entry_stats(chunks: Iterable[Chunk]) -> EntryStats:
    """The `EntryStats` of every entry in `chunks` (NaN entries count as lines only)."""
    stats = EntryStats()
    for values, counts in _quietly(chunks):
        stats.lines += int(values.size)
        defined = ~np.isnan(values)
        values, counts = values[defined], counts[defined]
        if values.size:
            stats.total += float(np.dot(values, counts.astype(np.float64)))
            stats.count += int(counts.sum())
            stats.min = min(stats.min, float(values.min()))
            stats.max = max(stats.max, float(values.max()))
    return stats


def mean_of_entries(chunks: Iterable[Chunk]) -> tuple[float | None, int]:
    """`sum(value * count) / sum(count)` over every entry (NaN ones included, as Burn's
    `NumericMetricsAggregate`; None when they cover no items) and the number of entries."""
    total, count, lines = 0.0, 0, 0
    for values, counts in _quietly(chunks):
        total += float(np.dot(values, counts.astype(np.float64)))
        count += int(counts.sum())
        lines += int(values.size)
    return (total / count if count > 0 else None), lines


def _quietly(chunks: Iterable[Chunk]) -> Iterator[Chunk]:
    """`chunks`, with NumPy's overflow warnings off (inf * count is inf, as in Python)."""
    for chunk in chunks:
        with np.errstate(over="ignore", invalid="ignore"):
            yield chunk


def count_entries(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES) -> int:
    """The entries `read_chunks(path)` gives if every line parses: the non-empty complete
    lines (0 if the file is missing), counted without parsing them."""
    try:
        file = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return 0
    found = 0
    with file:
        carry = b""
        while block := file.read(chunk_bytes):
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            data, carry = data[:cut], data[cut:]
            if data:  # it starts at a line's start: an empty line is a newline after a newline
                newlines = np.frombuffer(data, dtype=np.uint8) == _NEWLINE
                empty = int(newlines[0]) + int(np.count_nonzero(newlines[1:] & newlines[:-1]))
                found += int(np.count_nonzero(newlines)) - empty - data.count(_FINAL + b"\n")
    return found


def read_final(path: str | os.PathLike, tail_bytes: int = 4096) -> float | None:
    """The value of the `value,final` line that ends the log at `path`, as Burn reads it.

    Only the last complete line counts (an unterminated one, a write cut short, is ignored);
    None if it is not a final line or the file is missing or empty. Reads from the file's end.

    Raises:
        ValueError: if the last line ends in `,final` but its value is not a number.
    """
    try:
        file = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return None
    with file:
        size = file.seek(0, os.SEEK_END)
        while True:  # a longer tail until the last complete line is whole in it
            start = max(0, size - tail_bytes)
            file.seek(start)
            data = file.read(size - start)
            complete = data[: data.rfind(b"\n") + 1].rstrip(b"\n")
            if start == 0 or b"\n" in complete:
                break
            tail_bytes *= 2
    line = complete[complete.rfind(b"\n") + 1 :]
    if not line.endswith(_FINAL):
        return None
    text = line.decode("utf-8", errors="replace")
    try:
        return float(NumericEntry.deserialize(text).value)
    except ValueError as error:
        raise ValueError(f"The last line of {path} is not a final entry: {error}") from None


def count_lines(path: str | os.PathLike, chunk_bytes: int = CHUNK_BYTES) -> int:
    """The number of newlines in the file at `path` (0 if it is missing), read in blocks."""
    try:
        file = open(path, "rb")  # noqa: SIM115
    except FileNotFoundError:
        return 0
    with file:
        return sum(block.count(b"\n") for block in iter(lambda: file.read(chunk_bytes), b""))


def line_offset(path: str | os.PathLike, lines: int, chunk_bytes: int = CHUNK_BYTES) -> int | None:
    """The byte offset right after the `lines`-th newline of `path`; None if it has fewer.

    Read in blocks: memory does not grow with the file.
    """
    if lines <= 0:
        return 0
    offset = 0
    left = lines
    with open(path, "rb") as file:
        while block := file.read(chunk_bytes):
            found = block.count(b"\n")
            if found < left:
                left -= found
                offset += len(block)
                continue
            newlines = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == _NEWLINE)
            return offset + int(newlines[left - 1]) + 1
    return None

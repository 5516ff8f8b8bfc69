"""Per-epoch aggregates: each numeric metric's epoch value and the statistics of its log lines,
computed once when a split's epoch ends and kept beside the per-iteration logs.

`FileMetricLogger` writes them to `<split>/epoch-N/aggregates.json` (atomically, after the
epoch's `.log` files are complete), so readers — `LearnerSummary`, the metric store behind
early stopping and checkpoint strategies, `burnish summary` and `burnish report` — take the
epoch value from there instead of recomputing it from the lines. The file:

    {"format": "burnish.epoch-aggregates", "version": 1, "epoch": 3,
     "metrics": {"Loss": {"value": 0.31, "mean": 0.31, "min": 0.12, "max": 0.9,
                          "count": 10000, "lines": 157}}}

`value` is the metric's own epoch value (its `value()` at the epoch's end, from its state
summed over the ranks); `mean`, `min`, `max`, `count` and `lines` describe the logged entries
(`"value,count"` lines): the count-weighted mean (Burn's `Aggregate::Mean`), the lowest and
highest value (NaN entries left out), the items they cover and their number. A non-finite
number is written as the string `"NaN"`, `"Infinity"` or `"-Infinity"` (strict JSON).

Nothing here imports torch: readers of finished runs stay light.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from burnish.io import atomic_write_bytes

__all__ = [
    "AGGREGATES_FILE",
    "EntryStats",
    "MetricAggregate",
    "decode_aggregates",
    "encode_aggregates",
    "read_aggregates",
    "write_aggregates",
]

AGGREGATES_FILE = "aggregates.json"
FORMAT = "burnish.epoch-aggregates"
VERSION = 1

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


@dataclasses.dataclass(frozen=True)
class MetricAggregate:
    """One numeric metric over one epoch of one split.

    Attributes:
        value: The metric's epoch value: what its `value()` gave at the epoch's end (for a
            metric with a `NumericMetricState`, from the state summed over the ranks).
        mean: The count-weighted mean of the logged entries, `sum(value * count) / sum(count)`
            (Burn's `Aggregate::Mean`; how runs without this file get their epoch value).
        min: The lowest logged value (NaN entries left out; NaN if none is left).
        max: The highest logged value (likewise).
        count: The items the logged entries cover (the sum of their counts).
        lines: The number of logged entries (lines of the `.log` file).
    """

    value: float
    mean: float
    min: float
    max: float
    count: int
    lines: int


@dataclasses.dataclass
class EntryStats:
    """Running statistics of a metric's logged entries over an epoch (no per-value storage).

    A NaN entry (an undefined batch, e.g. perplexity of padding only) counts as a line only: the
    mean, min and max are those of the defined entries.

    Attributes:
        total: `sum(value * count)` over the non-NaN entries.
        count: `sum(count)` over the non-NaN entries.
        min: the lowest non-NaN value (inf before any).
        max: the highest non-NaN value (-inf before any).
        lines: the number of entries.
    """

    total: float = 0.0
    count: int = 0
    min: float = math.inf
    max: float = -math.inf
    lines: int = 0

    def add(self, value: float, count: int) -> None:
        """Add one logged entry."""
        self.lines += 1
        if math.isnan(value):
            return
        self.total += value * count
        self.count += count
        self.min = min(self.min, value)
        self.max = max(self.max, value)

    @classmethod
    def of(cls, entries: Iterable[tuple[float, int]]) -> EntryStats:
        """The statistics of `(value, count)` pairs."""
        stats = cls()
        for value, count in entries:
            stats.add(float(value), int(count))
        return stats

    def mean(self) -> float:
        """`total / count`; NaN without items."""
        return self.total / self.count if self.count else math.nan

    def aggregate(self, value: float) -> MetricAggregate:
        """The epoch's aggregate, with `value` as the metric's epoch value."""
        seen = self.min <= self.max
        low, high = (self.min, self.max) if seen else (math.nan, math.nan)
        return MetricAggregate(float(value), self.mean(), low, high, self.count, self.lines)

    def to_record(self) -> dict[str, Any]:
        """A plain dict (a mid-epoch checkpoint)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> EntryStats:
        """The statistics a `to_record()` holds."""
        return cls(
            float(record["total"]),
            int(record["count"]),
            float(record["min"]),
            float(record["max"]),
            int(record["lines"]),
        )


def encode_aggregates(epoch: int, aggregates: Mapping[str, MetricAggregate]) -> bytes:
    """The file's bytes for `epoch`: strict JSON (non-finite numbers as strings), UTF-8."""
    metrics = {
        name: {field: _encode_number(getattr(a, field)) for field in _FIELDS}
        for name, a in aggregates.items()
    }
    header = json.dumps({"format": FORMAT, "version": VERSION, "epoch": epoch})
    rows = [  # one line per metric: small, and readable with `cat`
        f"  {json.dumps(name, ensure_ascii=False)}: {json.dumps(fields, allow_nan=False)}"
        for name, fields in metrics.items()
    ]
    body = "{\n" + ",\n".join(rows) + "\n}" if rows else "{}"
    return f'{header[:-1]}, "metrics": {body}}}\n'.encode()


def decode_aggregates(data: bytes, source: str = "the aggregates") -> dict[str, MetricAggregate]:
    """The aggregates in `data` (an `encode_aggregates` result), by metric name.

    Raises:
        ValueError: naming `source`, if `data` is not such a file.
    """
    try:
        document = json.loads(data.decode("utf-8"))
        if document.get("format") != FORMAT or not isinstance(document.get("metrics"), dict):
            raise ValueError(f"not a {FORMAT!r} document")
        if document.get("version") != VERSION:
            raise ValueError(f"version {document.get('version')!r}, expected {VERSION}")
        return {str(name): _decode_metric(fields) for name, fields in document["metrics"].items()}
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        UnicodeDecodeError,
        RecursionError,
    ) as error:  # RecursionError: nesting deeper than the parser goes
        raise ValueError(
            f"{source} is not a burnish epoch aggregates file ({error}). It is written when an "
            "epoch ends; delete it to read the epoch values from the `.log` lines instead."
        ) from None


def write_aggregates(
    path: str | os.PathLike, epoch: int, aggregates: Mapping[str, MetricAggregate]
) -> Path:
    """Write the aggregates of `epoch` to `path` atomically (temp file, fsync, rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_bytes(path, encode_aggregates(epoch, aggregates))


def read_aggregates(path: str | os.PathLike) -> dict[str, MetricAggregate] | None:
    """The aggregates stored at `path`; None if there is no such file.

    Raises:
        ValueError: if the file is not an aggregates file.
    """
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    return decode_aggregates(data, str(path))


_FIELDS = tuple(field.name for field in dataclasses.fields(MetricAggregate))
_INTEGERS = {"count", "lines"}


def _encode_number(value: float) -> float | int | str:
    if isinstance(value, int):
        return value
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _decode_metric(fields: Any) -> MetricAggregate:
    if not isinstance(fields, dict) or set(fields) != set(_FIELDS):
        raise ValueError(f"a metric needs exactly the fields {list(_FIELDS)}: got {fields!r}")
    values: dict[str, Any] = {}
    for field in _FIELDS:
        raw = fields[field]
        if field in _INTEGERS:
            if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
                raise ValueError(f"`{field}` must be an int >= 0: got {raw!r}")
            values[field] = raw
        elif isinstance(raw, str) and raw in _NON_FINITE:
            values[field] = _NON_FINITE[raw]
        elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
            values[field] = float(raw)
        else:
            raise ValueError(f"`{field}` must be a number, 'NaN' or '(-)Infinity': got {raw!r}")
    return MetricAggregate(**values)

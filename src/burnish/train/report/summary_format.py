"""How the LearnerSummary writes a metric's value, in its text table and its HTML table alike,
and how its text table sizes its columns."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["format_value", "table_text", "value_text"]

HEADER = ("Split", "Metric", "Min.", "Epoch", "Max.", "Epoch")
# Burn's value and epoch cells are 9 wide plus one space (`{:<9}|`): 8 wide between " " and " ".
_CELL_WIDTH = 8


def value_text(value: float) -> str:
    """A value as Burn's `fmt_val` writes it, without the padding: `{:.3}`, or `{:.3e}`
    below 1e-2 (negative values included; Rust's float formatting).

    Example:
        >>> value_text(0.25), value_text(0.001234), value_text(-0.1031), value_text(float("nan"))
        ('0.250', '1.234e-3', '-1.031e-1', 'NaN')
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value < 1e-2:
        mantissa, exponent = f"{value:.3e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{value:.3f}"


def format_value(value: float) -> str:
    """Burn's `fmt_val`: `value_text` left-aligned in 9 characters (`{:<9.3}`).

    Example:
        >>> format_value(0.25), format_value(0.001234), format_value(float("nan"))
        ('0.250    ', '1.234e-3 ', 'NaN      ')
    """
    return f"{value_text(value):<9}"


def table_text(rows: Sequence[Sequence[str]], split_names: Sequence[str]) -> str:
    """The summary's table: the header, the rule and one line per row of six cells (split,
    metric, min., epoch, max., epoch).

    Each column is as wide as its widest cell, so every line has the same width and the bars
    align whatever the values (a sign, `-inf`, a 300-digit number). A table whose cells fit
    is Burn's layout exactly: the split column as wide as "Split" and `split_names`, the
    metric column as its longest name, the others 8 wide between one space each side.
    """
    widths = [max(len(HEADER[0]), *(len(name) for name in split_names)), len(HEADER[1])]
    widths += [_CELL_WIDTH] * 4
    for row in rows:
        widths = [max(width, len(cell)) for width, cell in zip(widths, row, strict=True)]
    lines = [_line(HEADER, widths), "|" + "|".join("-" * (width + 2) for width in widths) + "|"]
    lines += [_line(row, widths) for row in rows]
    return "".join(line + "\n" for line in lines)


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    return (
        "| "
        + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        + " |"
    )

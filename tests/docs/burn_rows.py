"""The "same" rows of docs/burn.md and the tests that exercise them.

A row of docs/burn.md's tables says "same" where Burn main's form is the book's, or where
burnish's form is Burn's. Each such row has a test that runs Burn's idiom of the row, ported
name by name, and asserts what Burn guarantees; the test registers itself with `@row(key)`,
the key being the row's first Burn cell (the first cell that is not "—"), normalised by
`row_key`. `tests/docs/test_burn_rows_meta.py` checks that every row has a test and every
registered key still names a row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

BURN_MD = Path(__file__).resolve().parents[2] / "docs" / "burn.md"

#: Registered keys -> the names of the tests that exercise them.
REGISTRY: dict[str, list[str]] = {}

_Test = TypeVar("_Test", bound=Callable[..., object])
_SAME = re.compile(r"^(the )?same\b", re.IGNORECASE)
_SEPARATOR = re.compile(r"^[\s:|-]+$")


@dataclass(frozen=True)
class SameRow:
    """A table row of docs/burn.md that says "same" in a Burn main or burnish column."""

    key: str
    line: int
    section: str
    columns: tuple[str, ...]  # the headers of the cells that say "same"


def row_key(text: str) -> str:
    """A row's key: its cell's text without backticks, whitespace collapsed."""
    return " ".join(text.replace("`", "").split())


def row(key: str) -> Callable[[_Test], _Test]:
    """Registers the decorated test as the one that exercises the "same" row `key`."""

    def register(test: _Test) -> _Test:
        REGISTRY.setdefault(row_key(key), []).append(getattr(test, "__name__", repr(test)))
        return test

    return register


def same_rows(text: str) -> list[SameRow]:
    """Every table row of `text` whose Burn main or burnish cell begins with "same"."""
    rows: list[SameRow] = []
    header: list[str] | None = None
    section = ""
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if _SEPARATOR.match(line):
            continue
        columns = tuple(
            name
            for name, cell in zip(header, cells)
            if ("main" in name.lower() or "burnish" in name.lower()) and _SAME.match(cell)
        )
        if columns:
            first = next((cell for cell in cells if cell not in ("—", "-", "")), cells[0])
            rows.append(SameRow(row_key(first), number, section, columns))
    return rows


def _cells(line: str) -> list[str]:
    # A `|` inside backticks is code, not a column separator.
    parts = re.split(r"\|(?=(?:[^`]*`[^`]*`)*[^`]*$)", line.strip().strip("|"))
    return [part.strip() for part in parts]

"""`SqliteDataset` (Burn: `SqliteDataset`): the items of one split table of a SQLite file."""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Generic

from burnish.data.dataset.base import Dataset, I, check_indices
from burnish.data.dataset.sqlite.codec import SqliteDatasetError, build_item, decode_item

__all__ = ["SqliteDataset", "check_split", "quote"]

_SPLIT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CHUNK = 4096  # indices per `get_many` query (two SQL parameters each)


def check_split(split: str) -> str:
    """`split`, if it is a plain SQL name (letters, digits, `_`; not starting with a digit).

    Raises:
        ValueError: otherwise (Burn pastes the split into its SQL; burnish refuses what could
            change the statement).
    """
    if not isinstance(split, str) or not _SPLIT.match(split):
        raise ValueError(
            "A split name must be letters, digits and `_`, not starting with a digit (it names "
            f"a table). Received: split={split!r}. Use e.g. 'train' or 'test'."
        )
    return split


def quote(split: str) -> str:
    """The split's table name quoted for SQL (after `check_split`)."""
    return f'"{check_split(split)}"'


class SqliteDataset(Dataset[I], Generic[I]):
    """The rows of table `split` in a SQLite file, read on access (Burn: `SqliteDataset`).

    The table has an integer primary key `row_id` counting from 1 (item `index` is row
    `index + 1`; the length is the largest `row_id`, as in Burn) and either:

    1. a single `item` BLOB column holding each item as MessagePack (what
       `SqliteDatasetWriter` writes; see `burnish.data.dataset.sqlite.codec`), or
    2. one column per field: an item is built from the columns named as its fields (any order;
       other columns ignored).

    The layout is found from the table, as in Burn. Items are built as `item_type` (a
    dataclass or `NamedTuple`, nested types from its annotations), or left as plain values
    (case 2: a `dict` of the columns but `row_id`) when `item_type` is `None`. Nothing is ever
    unpickled. The file is opened read-only, one connection per thread and process, so data
    loader workers can read it.

    Args:
        db_file: the SQLite file.
        split: the table, e.g. `"train"`.
        item_type: what each item is built as; `None` for plain values.

    Raises:
        SqliteDatasetError: if the file is missing or not a SQLite database, or has no table
            `split`.
        ValueError: if `split` is not a plain name.

    Example:
        >>> train = SqliteDataset.from_db_file("data.db", "train", item_type=Sample)
        >>> len(train), train.get(0)
        (2, Sample(column_str='HI1', ...))
    """

    def __init__(self, db_file: str | os.PathLike, split: str, item_type: Any = None) -> None:
        self._db_file = Path(db_file)
        self._split = check_split(split)
        self.item_type = item_type
        self._connections: dict[tuple[int, int], sqlite3.Connection] = {}
        self._lock = threading.Lock()
        self._columns, column_types = self._table_info()
        self.row_serialized = _is_row_serialized(self._columns, column_types)
        self._len = int(self._query(f"select coalesce(max(row_id), 0) from {quote(split)}")[0][0])

    @classmethod
    def from_db_file(
        cls, db_file: str | os.PathLike, split: str, item_type: Any = None
    ) -> SqliteDataset[Any]:
        """The dataset of table `split` in `db_file` (Burn: `SqliteDataset::from_db_file`)."""
        return cls(db_file, split, item_type)

    def db_file(self) -> Path:
        """The database file."""
        return self._db_file

    def split(self) -> str:
        """The split (table) name."""
        return self._split

    def __len__(self) -> int:
        return self._len

    def get(self, index: int) -> I | None:
        """Item `index` (row `index + 1`), or `None` if out of range.

        Raises:
            SqliteDatasetError: if the row is missing (a gap in `row_id`) or does not decode.
        """
        if not 0 <= index < self._len:
            return None
        return self._fetch([index])[0]

    def get_many(self, indices: Iterable[int]) -> list[I]:
        """The items at `indices` in that order (repeats included), in one query per 4,096
        indices, as Burn's `get_many`.

        Raises:
            IndexError: if an index is not in `[0, len(self))`.
            SqliteDatasetError: if a row is missing or does not decode.
        """
        checked = check_indices(self, indices)
        items: list[I] = []
        for start in range(0, len(checked), _CHUNK):
            items.extend(self._fetch(checked[start : start + _CHUNK]))
        return items

    def __repr__(self) -> str:
        return f"SqliteDataset({str(self._db_file)!r}, split={self._split!r}, len={self._len})"

    # -- Reading -------------------------------------------------------------------------------

    def _fetch(self, indices: list[int]) -> list[I]:
        """Rows `index + 1`, ordered as `indices`."""
        if not indices:
            return []
        values = ", ".join(["(?, ?)"] * len(indices))
        selected = "t.item" if self.row_serialized else "t.*"
        rows = self._query(
            f"with req(row_id, ord) as (values {values}) select {selected} from req "
            f"join {quote(self._split)} t on t.row_id = req.row_id order by req.ord",
            [value for ord_, index in enumerate(indices) for value in (index + 1, ord_)],
        )
        if len(rows) != len(indices):
            raise SqliteDatasetError(
                f"{self._where()}: row(s) not found for valid indices; `row_id` must run from "
                f"1 to {self._len} without gaps (item i is row i + 1)."
            )
        return [self._item(row, index) for row, index in zip(rows, indices, strict=True)]

    def _item(self, row: tuple[Any, ...], index: int) -> I:
        where = f"{self._where()} item {index}"
        if self.row_serialized:
            return decode_item(row[0], self.item_type, where)
        fields = {name: value for name, value in zip(self._columns, row, strict=True)}
        if self.item_type is None:
            fields.pop("row_id", None)
        return build_item(fields, self.item_type, where)

    def _where(self) -> str:
        return f"SQLite dataset {str(self._db_file)!r} split {self._split!r}"

    def _table_info(self) -> tuple[list[str], list[str]]:
        """The table's column names and declared types (lower case)."""
        listed = self._query("select name from sqlite_master where type = 'table'")
        tables = [row[0] for row in listed if not str(row[0]).startswith("sqlite_")]
        if self._split not in tables:
            raise SqliteDatasetError(
                f"{self._where()}: the file has no table {self._split!r}; its tables are "
                f"{sorted(tables)}. Pass one of those as `split`."
            )
        info = self._query(f"pragma table_info({quote(self._split)})")
        return [str(row[1]) for row in info], [str(row[2]).lower() for row in info]

    def _query(self, sql: str, parameters: list[int] | None = None) -> list[tuple[Any, ...]]:
        try:
            return self._connection().execute(sql, parameters or []).fetchall()
        except sqlite3.DatabaseError as error:
            raise SqliteDatasetError(
                f"{self._where()}: {error}. The file is corrupt or not a SQLite database."
            ) from None

    def _connection(self) -> sqlite3.Connection:
        """This thread's (and process's) read-only connection: connections do not cross a fork."""
        key = (os.getpid(), threading.get_ident())
        connection = self._connections.get(key)
        if connection is None:
            connection = _open_read_only(self._db_file)
            with self._lock:
                self._connections[key] = connection
        return connection

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_connections"], state["_lock"] = {}, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _is_row_serialized(columns: list[str], types: list[str]) -> bool:
    """Whether the table is Burn's `(row_id integer, item blob)` layout."""
    return [name.lower() for name in columns] == ["row_id", "item"] and types == [
        "integer",
        "blob",
    ]


def _open_read_only(db_file: Path) -> sqlite3.Connection:
    if not db_file.is_file():
        raise SqliteDatasetError(
            f"SQLite dataset file {str(db_file)!r} not found. Write it with "
            "`SqliteDatasetWriter` (or `SqliteDatasetStorage.writer`), or pass the right path."
        )
    uri = f"{db_file.resolve().as_uri()}?mode=ro"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)

"""`SqliteDatasetWriter` (Burn: `SqliteDatasetWriter`): writes items, then commits the file."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from types import TracebackType
from typing import Any, Generic

from burnish.data.dataset.base import I
from burnish.data.dataset.sqlite.codec import SqliteDatasetError, encode_item
from burnish.data.dataset.sqlite.dataset import quote

__all__ = ["SqliteDatasetWriter"]


class SqliteDatasetWriter(Generic[I]):
    """Writes items into split tables of a new SQLite file (Burn: `SqliteDatasetWriter`).

    Items go into a temporary file beside the target, `<db_file stem>.db.tmp` (Burn's name),
    one table per split in Burn's layout (`row_id integer primary key autoincrement`, `item
    blob`, MessagePack). `set_completed()` commits, syncs it to disk and renames it onto
    `db_file` in one atomic step: until then `db_file` is untouched (an older file with
    `overwrite=True` stays whole), and a crash or kill never leaves a partial file under the
    final name. A writer dropped without `set_completed` deletes its temporary file (as Burn's
    does); a stale one left by a killed process is removed by the next writer.

    Safe to share between threads (writes are serialised).

    Args:
        db_file: the file to create.
        overwrite: replace `db_file` if it exists (at `set_completed`).

    Raises:
        SqliteDatasetError: if `db_file` exists and `overwrite` is false (Burn: `FileExists`).

    Example:
        >>> with SqliteDatasetWriter("data.db", overwrite=True) as writer:
        ...     for sample in samples:
        ...         writer.write("train", sample)  # returns the item's index
        >>> SqliteDataset.from_db_file("data.db", "train", item_type=Sample)  # committed on exit
    """

    def __init__(self, db_file: str | os.PathLike, overwrite: bool) -> None:
        self.db_file = Path(db_file)
        self.overwrite = overwrite
        if self.db_file.exists() and not overwrite:
            raise SqliteDatasetError(
                "Overwrite flag is set to false and the database file already exists: "
                f"{str(self.db_file)!r}. Pass overwrite=True to replace it, or another path."
            )
        self.db_file.parent.mkdir(parents=True, exist_ok=True)
        self.db_file_tmp: Path | None = self.db_file.with_suffix(".db.tmp")
        self.db_file_tmp.unlink(missing_ok=True)  # a stale one from a killed writer
        self._connection: sqlite3.Connection | None = sqlite3.connect(
            self.db_file_tmp, check_same_thread=False
        )
        # Durability is not needed while writing: an unfinished file is never used.
        self._connection.execute("pragma synchronous = off")
        self._connection.execute("pragma journal_mode = off")
        self._splits: set[str] = set()
        self._completed = False
        self._lock = threading.Lock()
        self._discard = weakref.finalize(self, _discard, self._connection, self.db_file_tmp)

    @classmethod
    def new(cls, db_file: str | os.PathLike, overwrite: bool) -> SqliteDatasetWriter[Any]:
        """Burn's constructor name: `SqliteDatasetWriter::new(db_file, overwrite)`."""
        return cls(db_file, overwrite)

    @property
    def is_completed(self) -> bool:
        """Whether `set_completed` has committed the file."""
        return self._completed

    def write(self, split: str, item: I) -> int:
        """Append `item` to table `split` (created on first use); returns its index there.

        Raises:
            SqliteDatasetError: if the writer is completed.
            ValueError: if `split` is not a plain name (letters, digits, `_`).
            TypeError: if the item cannot be serialized (see `codec`).
        """
        table = quote(split)
        blob = encode_item(item)
        with self._lock:
            connection = self._open()
            if split not in self._splits:
                connection.execute(
                    f"create table if not exists {table} (row_id integer primary key "
                    "autoincrement not null, item blob not null)"
                )
                self._splits.add(split)
            cursor = connection.execute(f"insert into {table} (item) values (?)", (blob,))
            assert cursor.lastrowid is not None
            return cursor.lastrowid - 1

    def set_completed(self) -> None:
        """Commit the items and move the file onto `db_file` atomically (Burn: `set_completed`).

        Raises:
            SqliteDatasetError: if the writer is already completed.
        """
        with self._lock:
            connection, tmp = self._open(), self.db_file_tmp
            assert tmp is not None
            connection.commit()
            connection.close()
            self._connection = None
            _fsync(tmp)
            os.replace(tmp, self.db_file)
            _fsync_dir(self.db_file.parent)
            self.db_file_tmp = None
            self._discard.detach()
            self._completed = True

    def __enter__(self) -> SqliteDatasetWriter[I]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Complete the file, or on an exception discard it (the target stays untouched)."""
        if self._connection is None:
            return
        if kind is None:
            self.set_completed()
        else:
            self._discard()
            self._connection = self.db_file_tmp = None

    def _open(self) -> sqlite3.Connection:
        if self._connection is None:
            state = "completed" if self._completed else "discarded (an error left its `with`)"
            raise SqliteDatasetError(
                f"Cannot save to a {state} dataset writer ({str(self.db_file)!r}). "
                "Open a new `SqliteDatasetWriter` to write another file."
            )
        return self._connection

    def __repr__(self) -> str:
        state = "completed" if self._completed else "writing"
        return f"SqliteDatasetWriter({str(self.db_file)!r}, {state}, splits={sorted(self._splits)})"


def _discard(connection: sqlite3.Connection, tmp: Path) -> None:
    """Close and delete an unfinished temporary file."""
    with contextlib.suppress(sqlite3.Error):
        connection.close()
    tmp.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as file:
        os.fsync(file.fileno())


def _fsync_dir(folder: Path) -> None:
    """Make the rename durable where the OS allows syncing a folder."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)

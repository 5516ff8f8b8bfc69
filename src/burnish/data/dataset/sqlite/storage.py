"""`SqliteDatasetStorage` (Burn: `SqliteDatasetStorage`): where a SQLite dataset file lives."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from burnish.data.dataset.download import cache_dir
from burnish.data.dataset.sqlite.codec import SqliteDatasetError
from burnish.data.dataset.sqlite.dataset import SqliteDataset
from burnish.data.dataset.sqlite.writer import SqliteDatasetWriter
from burnish.value_builder import ValueBuilder

__all__ = ["SqliteDatasetStorage", "sanitize"]

_UNSAFE = re.compile(r'[/\\?%*:|"<>\x00-\x1f\x80-\x9f]')


def sanitize(name: str) -> str:
    """`name` without the characters a file name cannot hold (as Burn's `sanitize_filename`)."""
    cleaned = _UNSAFE.sub("", name).rstrip(". ")
    return "" if cleaned in {".", ".."} else cleaned


class SqliteDatasetStorage(ValueBuilder):
    """A dataset file given by name (in a base folder) or by path (Burn: `SqliteDatasetStorage`).

    `from_name(name)` stores `<base_dir>/<name>.db`, the base folder being `with_base_dir(...)`
    or the user cache, `$XDG_CACHE_HOME/burnish/datasets` (Burn: `<cache>/burn-dataset`).

    Example:
        >>> storage = SqliteDatasetStorage.from_name("preprocessed").with_base_dir("data")
        >>> with storage.writer(overwrite=True) as writer:
        ...     writer.write("train", item)
        >>> train = storage.reader("train", item_type=Item)
    """

    def __init__(self, name: str | None = None, db_file: str | os.PathLike | None = None) -> None:
        if (name is None) == (db_file is None):
            raise ValueError(
                "`SqliteDatasetStorage` needs a name or a file, not both nor neither. Use "
                "`SqliteDatasetStorage.from_name(name)` or `.from_file(db_file)`."
            )
        self.name = name
        self._db_file = Path(db_file) if db_file is not None else None
        self._base_dir: Path | None = None

    @classmethod
    def from_name(cls, name: str) -> SqliteDatasetStorage:
        """The dataset `<base_dir>/<name>.db` (the name sanitised for a file name)."""
        if not sanitize(name):
            raise ValueError(
                f"A dataset name must keep some characters after removing those a file name "
                f"cannot hold. Received: name={name!r}."
            )
        return cls(name=name)

    @classmethod
    def from_file(cls, db_file: str | os.PathLike) -> SqliteDatasetStorage:
        """The dataset in `db_file`."""
        return cls(db_file=db_file)

    def with_base_dir(self, base_dir: str | os.PathLike) -> SqliteDatasetStorage:
        """Store named datasets in `base_dir` instead of the cache: a new storage (this one
        stays as it was)."""
        return self._replace(_base_dir=Path(base_dir))

    def exists(self) -> bool:
        """Whether the database file exists."""
        return self.db_file().exists()

    def db_file(self) -> Path:
        """The database file's path."""
        if self._db_file is not None:
            return self._db_file
        assert self.name is not None
        return self.base_dir(self._base_dir) / f"{sanitize(self.name)}.db"

    @staticmethod
    def base_dir(base_dir: str | os.PathLike | None = None) -> Path:
        """`base_dir`, or the default folder of named datasets (the user cache)."""
        return Path(base_dir) if base_dir is not None else cache_dir("")

    def writer(self, overwrite: bool) -> SqliteDatasetWriter[Any]:
        """A writer of the database file (see `SqliteDatasetWriter`)."""
        return SqliteDatasetWriter(self.db_file(), overwrite)

    def reader(self, split: str, item_type: Any = None) -> SqliteDataset[Any]:
        """The dataset of table `split` (see `SqliteDataset`).

        Raises:
            SqliteDatasetError: if the file does not exist (Burn panics) or has no such table.
        """
        if not self.exists():
            raise SqliteDatasetError(
                f"The database file does not exist: {str(self.db_file())!r}. Write it first "
                "with `storage.writer(overwrite)`."
            )
        return SqliteDataset(self.db_file(), split, item_type)

    def __repr__(self) -> str:
        return f"SqliteDatasetStorage({str(self.db_file())!r})"

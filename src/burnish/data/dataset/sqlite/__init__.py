"""SQLite datasets (Burn: `burn::data::dataset::SqliteDataset` and its writer and storage)."""

from burnish.data.dataset.sqlite.codec import SqliteDatasetError
from burnish.data.dataset.sqlite.dataset import SqliteDataset
from burnish.data.dataset.sqlite.storage import SqliteDatasetStorage
from burnish.data.dataset.sqlite.writer import SqliteDatasetWriter

__all__ = [
    "SqliteDataset",
    "SqliteDatasetError",
    "SqliteDatasetStorage",
    "SqliteDatasetWriter",
]

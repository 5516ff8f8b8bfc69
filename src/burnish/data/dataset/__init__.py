"""Datasets (Burn: `burn::data::dataset`): the `Dataset` base, in-memory, fake and SQLite
datasets, and transforms.

Vision datasets (MNIST, image folders) live in `burnish.data.dataset.vision`.
"""

from burnish.data.dataset.base import Dataset
from burnish.data.dataset.fake import FakeDataset
from burnish.data.dataset.in_memory import InMemDataset
from burnish.data.dataset.sqlite import (
    SqliteDataset,
    SqliteDatasetError,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
)
from burnish.data.dataset.transform import (
    ComposedDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    RngSource,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
)

__all__ = [
    "ComposedDataset",
    "Dataset",
    "FakeDataset",
    "InMemDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "RngSource",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "SqliteDataset",
    "SqliteDatasetError",
    "SqliteDatasetStorage",
    "SqliteDatasetWriter",
    "WindowsDataset",
]

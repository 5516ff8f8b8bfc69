"""Datasets (Burn: `burn::data::dataset`): the `Dataset` base, in-memory data and transforms.

Vision datasets live in `burnish.data.dataset.vision`.
"""

from burnish.data.dataset.base import Dataset
from burnish.data.dataset.in_memory import InMemDataset
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
    "InMemDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "RngSource",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "WindowsDataset",
]

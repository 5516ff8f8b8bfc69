"""Dataset transforms (Burn: `burn::data::dataset::transform`): views over other datasets."""

from burnish.data.dataset.transform.composed import ComposedDataset
from burnish.data.dataset.transform.mapper import Mapper, MapperDataset
from burnish.data.dataset.transform.partial import PartialDataset
from burnish.data.dataset.transform.sampler import SamplerDataset
from burnish.data.dataset.transform.selection import RngSource, SelectionDataset
from burnish.data.dataset.transform.shuffle import ShuffledDataset
from burnish.data.dataset.transform.window import WindowsDataset

__all__ = [
    "ComposedDataset",
    "Mapper",
    "MapperDataset",
    "PartialDataset",
    "RngSource",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "WindowsDataset",
]

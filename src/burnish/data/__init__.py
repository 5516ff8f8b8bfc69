"""Data (Burn: `burn::data`): datasets, MNIST, batchers and the data loader.

from burnish.data import DataLoaderBuilder, MnistDataset

loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).shuffle(42).build(
    MnistDataset.train()
)
"""

from burnish.data.dataloader import (
    Batcher,
    BatchSampler,
    DataLoader,
    DataLoaderBuilder,
    DataLoaderIterator,
    Progress,
    epoch_order,
)
from burnish.data.dataset import (
    ComposedDataset,
    Dataset,
    InMemDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    RngSource,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
)
from burnish.data.dataset.vision import FashionMnistDataset, MnistDataset, MnistItem

__all__ = [
    "BatchSampler",
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "Dataset",
    "FashionMnistDataset",
    "InMemDataset",
    "Mapper",
    "MapperDataset",
    "MnistDataset",
    "MnistItem",
    "PartialDataset",
    "Progress",
    "RngSource",
    "SamplerDataset",
    "SelectionDataset",
    "ShuffledDataset",
    "WindowsDataset",
    "epoch_order",
]

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
    split_dataloader,
)
from burnish.data.dataset import (
    ComposedDataset,
    Dataset,
    FakeDataset,
    InMemDataset,
    Mapper,
    MapperDataset,
    PartialDataset,
    RngSource,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    SqliteDataset,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
    WindowsDataset,
)
from burnish.data.dataset.vision import (
    FashionMnistDataset,
    ImageDatasetItem,
    ImageFolderDataset,
    MnistDataset,
    MnistItem,
)

__all__ = [
    "BatchSampler",
    "Batcher",
    "ComposedDataset",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "Dataset",
    "FakeDataset",
    "FashionMnistDataset",
    "ImageDatasetItem",
    "ImageFolderDataset",
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
    "SqliteDataset",
    "SqliteDatasetStorage",
    "SqliteDatasetWriter",
    "WindowsDataset",
    "epoch_order",
    "split_dataloader",
]

"""Data loading (Burn: `burn::data::dataloader`): batchers, the builder and the loader."""

from burnish.data.dataloader.batcher import Batcher
from burnish.data.dataloader.builder import DataLoaderBuilder
from burnish.data.dataloader.loader import DataLoader, DataLoaderIterator, Progress
from burnish.data.dataloader.sampler import BatchSampler, epoch_order
from burnish.data.dataloader.split import split_dataloader

__all__ = [
    "BatchSampler",
    "Batcher",
    "DataLoader",
    "DataLoaderBuilder",
    "DataLoaderIterator",
    "Progress",
    "epoch_order",
    "split_dataloader",
]

import pytest
import torch

from burnish.data.dataloader import Batcher, DataLoader, DataLoaderBuilder
from burnish.data.dataset import InMemDataset


class Stack(Batcher):
    def batch(self, items, device):
        return torch.tensor(items, device=device)


def test_defaults_follow_burn():
    loader = DataLoaderBuilder(Stack()).build(InMemDataset(range(3)))
    assert isinstance(loader, DataLoader)
    assert (loader.batch_size, loader.seed, loader.num_workers) == (1, None, 0)
    assert loader.device == torch.device("cpu")
    assert [batch.tolist() for batch in loader] == [[0], [1], [2]]


def test_settings_are_kept():
    loader = (
        DataLoaderBuilder(Stack())
        .batch_size(2)
        .shuffle(7)
        .num_workers(1)
        .prefetch_factor(3)
        .set_device("cpu")
        .build(InMemDataset(range(5)))
    )
    assert (loader.batch_size, loader.seed, loader.num_workers) == (2, 7, 1)
    assert "batch_size=2, seed=7, num_workers=1" in repr(loader)


@pytest.mark.parametrize(
    ("method", "value", "message"),
    [
        ("batch_size", 0, r"`batch_size` must be an integer >= 1. Received: batch_size=0."),
        ("batch_size", 2.0, r"`batch_size` must be an integer >= 1. Received: batch_size=2.0."),
        ("num_workers", -1, r"`num_workers` must be an integer >= 0. Received: num_workers=-1."),
        ("shuffle", -3, r"`seed` must be an integer >= 0. Received: seed=-3."),
        ("prefetch_factor", 0, r"`prefetch_factor` must be an integer >= 1"),
    ],
)
def test_bad_arguments_are_clear_errors(method, value, message):
    with pytest.raises(ValueError, match=message):
        getattr(DataLoaderBuilder(Stack()), method)(value)


def test_bad_device_batcher_and_dataset():
    with pytest.raises(ValueError, match=r"Unknown device 'gpu0'"):
        DataLoaderBuilder(Stack()).set_device("gpu0")
    with pytest.raises(TypeError, match=r"batcher with a `batch\(items, device\)` method"):
        DataLoaderBuilder(lambda items: items)
    with pytest.raises(TypeError, match=r"dataset with `get\(index\)` and `len\(\)`.*list"):
        DataLoaderBuilder(Stack()).build([1, 2, 3])

"""Real MNIST through the loader with an MNIST batcher's stacked fast path."""

import pytest
import torch

from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import MapperDataset
from burnish.data.dataset.vision import MnistDataset

from tests.helpers import MnistBatch, MnistBatcher


@pytest.fixture(scope="module")
def train():
    return MnistDataset.train()


def build(dataset, seed=42, workers=0):
    return (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(64)
        .shuffle(seed)
        .num_workers(workers)
        .build(dataset)
    )


def test_one_epoch_of_the_train_set(train):
    data_loader = build(train)
    assert len(data_loader) == 938 and data_loader.num_items() == 60000
    counts = torch.zeros(10, dtype=torch.int64)
    total = total_sq = 0.0
    sizes = []
    for batch in data_loader:
        assert isinstance(batch, MnistBatch)
        counts += torch.bincount(batch.targets, minlength=10)
        total += batch.images.sum().double()
        total_sq += batch.images.square().sum().double()
        sizes.append(len(batch.targets))
    assert batch.images.dtype == torch.float32 and batch.targets.dtype == torch.int64
    assert batch.images.shape == (32, 28, 28)  # the last partial batch is kept
    assert sizes == [64] * 937 + [32]
    assert counts[0] == 5923 and counts.sum() == 60000
    mean = total / (60000 * 784)
    std = (total_sq / (60000 * 784) - mean**2).sqrt()
    assert abs(mean) < 1e-3 and abs(std - 1) < 1e-3


def test_fast_path_equals_the_item_by_item_path(train):
    part = build(train).slice(0, 300)
    slow = build(MapperDataset(train, lambda item: item)).slice(0, 300)
    for fast_batch, slow_batch in zip(part, slow, strict=True):
        torch.testing.assert_close(fast_batch.images, slow_batch.images, rtol=0, atol=0)
        assert torch.equal(fast_batch.targets, slow_batch.targets)


def test_same_seed_same_batches_and_a_new_order_each_epoch(train):
    first, second = build(train).slice(0, 1000), build(train).slice(0, 1000)
    epoch_0 = [batch.targets for batch in first]
    assert all(map(torch.equal, epoch_0, [batch.targets for batch in second]))
    epoch_1 = [batch.targets for batch in first]
    assert not all(map(torch.equal, epoch_0, epoch_1))
    assert torch.equal(torch.cat(epoch_0).sort().values, torch.cat(epoch_1).sort().values)


def test_skip_resumes_the_epoch_exactly(train):
    reference = build(train).slice(0, 1000)
    list(reference)
    full = [batch.targets for batch in reference]
    resumed = build(train).slice(0, 1000)
    resumed.load_record({"epoch": 1})
    assert all(map(torch.equal, [batch.targets for batch in resumed.iter(skip=5)], full[5:]))


def test_two_workers_equal_no_workers(train):
    single, multi = build(train).slice(0, 640), build(train, workers=2).slice(0, 640)
    for one, other in zip(single, multi, strict=True):
        assert torch.equal(one.images, other.images) and torch.equal(one.targets, other.targets)

"""The data loader on small in-memory datasets: order, epochs, resume, slicing, workers."""

from dataclasses import dataclass

import numpy as np
import pytest
import torch

from burnish.data.dataloader import Batcher, DataLoaderBuilder, Progress, epoch_order
from burnish.data.dataloader.transfer import map_tensors, move_to_device
from burnish.data.dataset import InMemDataset, MapperDataset


class Stack(Batcher):
    def batch(self, items, device):
        return torch.tensor(items, device=device)


class Counting(InMemDataset):
    """Records every index read, to prove skipped items are never loaded."""

    def __init__(self, items):
        super().__init__(items)
        self.reads = []

    def get(self, index):
        self.reads.append(index)
        return super().get(index)


def loader(size=10, batch_size=3, seed=None, workers=0, dataset=None, batcher=None):
    builder = DataLoaderBuilder(batcher or Stack()).batch_size(batch_size).num_workers(workers)
    if seed is not None:
        builder = builder.shuffle(seed)
    return builder.build(dataset if dataset is not None else InMemDataset(range(size)))


def epoch(data_loader, **kwargs):
    return [batch.tolist() for batch in data_loader.iter(**kwargs)]


def test_in_order_batches_keep_the_last_partial_one():
    data_loader = loader(10, 3)
    assert len(data_loader) == 4 and data_loader.num_items() == 10
    assert epoch(data_loader) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert [batch.tolist() for batch in data_loader] == epoch(data_loader)  # __iter__


def test_empty_dataset_gives_no_batch():
    data_loader = loader(0, 3)
    assert len(data_loader) == 0 and epoch(data_loader) == []


def test_shuffle_is_deterministic_and_reshuffles_each_epoch():
    first, second = loader(50, 8, seed=42), loader(50, 8, seed=42)
    epochs = [epoch(first) for _ in range(3)]
    assert [epoch(second) for _ in range(3)] == epochs
    assert epochs[0] != epochs[1] != epochs[2]
    for batches in epochs:
        assert sorted(i for batch in batches for i in batch) == list(range(50))
        assert [len(batch) for batch in batches] == [8] * 6 + [2]
    assert epoch(loader(50, 8, seed=43)) != epochs[0]


def test_epoch_order_is_a_pure_function_of_seed_and_epoch():
    data_loader = loader(20, 20, seed=5)
    epoch(data_loader)
    expected = np.random.default_rng([5, 1]).permutation(20).tolist()
    assert epoch(data_loader) == [expected]
    assert epoch_order(np.arange(20), 5, 1).tolist() == expected
    assert epoch_order(np.arange(4), None, 9).tolist() == [0, 1, 2, 3]


def test_skip_equals_a_fresh_epoch_from_batch_k_without_loading_skipped_items():
    reference = loader(25, 4, seed=3)
    epoch(reference)
    full = epoch(reference)  # epoch 1
    dataset = Counting(range(25))
    resumed = loader(batch_size=4, seed=3, dataset=dataset).load_record({"epoch": 1})
    assert epoch(resumed, skip=2) == full[2:]
    assert sorted(dataset.reads) == sorted(i for batch in full[2:] for i in batch)
    assert resumed.epoch == 2
    assert epoch(loader(25, 4, seed=3), skip=7) == []


def test_skip_must_be_in_range():
    data_loader = loader(10, 3)
    for bad in (-1, 5, 1.0):
        with pytest.raises(ValueError, match=r"`skip` must be an integer in \[0, 4\]"):
            data_loader.iter(skip=bad)
    assert data_loader.epoch == 0  # a refused call does not use up an epoch


def test_record_round_trip():
    data_loader = loader(10, 3, seed=1)
    epoch(data_loader)
    record = data_loader.to_record()
    assert record == {"epoch": 1, "seed": 1, "num_items": 10, "batch_size": 3, "world_size": 1}
    expected = epoch(data_loader)
    restored = loader(10, 3, seed=1).load_record(record)
    assert restored.epoch == 1 and epoch(restored) == expected


def test_record_mismatch_and_malformed_record_are_errors():
    with pytest.raises(ValueError, match=r"record has seed=1 but this loader has seed=2"):
        loader(10, 3, seed=2).load_record({"epoch": 0, "seed": 1})
    with pytest.raises(ValueError, match=r"record has batch_size=4 but this loader has"):
        loader(10, 3).load_record({"epoch": 0, "batch_size": 4})
    with pytest.raises(ValueError, match=r"needs a non-negative int `epoch`"):
        loader().load_record({"epoch": -1})
    with pytest.raises(ValueError, match=r"needs a non-negative int `epoch`"):
        loader().load_record([1])


def test_progress_counts_items_of_the_epoch():
    iterator = loader(10, 4).iter(skip=1)
    assert iterator.progress() == Progress(4, 10)
    next(iterator)
    assert iterator.progress() == Progress(8, 10)
    next(iterator)
    assert iterator.progress() == Progress(10, 10) and iterator.epoch == 0
    with pytest.raises(StopIteration):
        next(iterator)


def test_slice_is_over_items_and_keeps_the_epoch_counter():
    data_loader = loader(10, 3)
    part = data_loader.slice(2, 7)
    assert part.num_items() == 5 and len(part) == 2
    assert epoch(part) == [[2, 3, 4], [5, 6]]
    shuffled = loader(10, 3, seed=4)
    epoch(shuffled)
    assert shuffled.slice(0, 10).epoch == 1
    assert epoch(shuffled.slice(0, 10)) == epoch(shuffled)
    for start, end in ((-1, 3), (4, 3), (0, 11)):
        with pytest.raises(ValueError, match=r"0 <= start <= end <= num_items \(10\)"):
            data_loader.slice(start, end)


def test_to_device_gives_an_independent_loader():
    data_loader = loader(6, 3, seed=0)
    moved = data_loader.to_device("cpu")
    assert moved is not data_loader and moved.device == torch.device("cpu")
    assert epoch(moved) == epoch(data_loader)
    assert moved.epoch == data_loader.epoch == 1


@dataclass
class Batch:
    values: torch.Tensor
    noise: torch.Tensor


class Noisy(Batcher):
    """Uses the RNG, so it proves worker RNGs are seeded from (seed, epoch)."""

    def batch(self, items, device):
        return Batch(torch.tensor(items, device=device), torch.rand(2))


def as_lists(data_loader):
    return [(batch.values.tolist(), batch.noise.tolist()) for batch in data_loader]


def test_workers_give_the_same_batches_as_no_workers():
    single = loader(40, 6, seed=9)
    multi = loader(40, 6, seed=9, workers=2)
    for _ in range(2):
        assert epoch(multi) == epoch(single)
    assert epoch(loader(40, 6, seed=9, workers=2), skip=3) == epoch(loader(40, 6, seed=9))[3:]


def test_worker_rngs_are_seeded_from_seed_and_epoch():
    first, second = loader(12, 4, 1, 2, batcher=Noisy()), loader(12, 4, 1, 2, batcher=Noisy())
    runs = [as_lists(first), as_lists(first)]
    assert [as_lists(second), as_lists(second)] == runs
    assert [noise for _, noise in runs[0]] != [noise for _, noise in runs[1]]


class FastPath(Batcher):
    def __init__(self):
        self.calls = []

    def batch(self, items, device):
        self.calls.append("batch")
        return torch.tensor(items, device=device)

    def batch_stacked(self, items, device):
        self.calls.append("batch_stacked")
        return torch.from_numpy(items).to(device)


class Arrays(InMemDataset):
    def get_stacked(self, indices):
        return np.asarray(self.items)[indices]


def test_fast_path_is_used_when_both_sides_support_it():
    batcher = FastPath()
    fast = epoch(loader(batch_size=4, seed=2, dataset=Arrays(range(10)), batcher=batcher))
    assert batcher.calls == ["batch_stacked"] * 3
    batcher.calls.clear()
    mapped = MapperDataset(Arrays(range(10)), lambda item: item)  # no stacked gather
    slow = epoch(loader(batch_size=4, seed=2, dataset=mapped, batcher=batcher))
    assert batcher.calls == ["batch"] * 3 and slow == fast
    assert epoch(loader(batch_size=4, seed=2, dataset=Arrays(range(10)))) == fast  # plain batcher


def test_move_to_device_reaches_inside_containers():
    batch = {"a": [torch.ones(1), (torch.zeros(1), "text")], "b": Batch(torch.ones(2), None)}
    moved = move_to_device(batch, torch.device("meta"))
    assert moved["a"][0].device.type == "meta" and moved["a"][1][0].device.type == "meta"
    assert moved["a"][1][1] == "text" and isinstance(moved["a"][1], tuple)
    assert isinstance(moved["b"], Batch) and moved["b"].values.device.type == "meta"
    assert map_tensors(3, lambda tensor: tensor) == 3


def _indices(loader, epoch_count=1):
    return [[int(i) for i in batch] for _ in range(epoch_count) for batch in loader.iter()]


@pytest.mark.parametrize(("num_items", "world_size", "batch_size"), [(12, 2, 3), (10, 3, 2)])
def test_shards_together_are_one_process_with_a_bigger_batch(num_items, world_size, batch_size):
    dataset = InMemDataset(list(range(num_items)))
    base = DataLoaderBuilder(Stack()).batch_size(batch_size).shuffle(5).build(dataset)
    shards = [base.shard(rank, world_size) for rank in range(world_size)]
    lengths = {len(shard) for shard in shards}
    assert len(lengths) == 1  # every rank has the same number of batches (no collective hangs)
    single = DataLoaderBuilder(Stack()).batch_size(batch_size * world_size).shuffle(5)
    whole = _indices(single.build(dataset))
    per_rank = [_indices(shard) for shard in shards]
    for i, batch in enumerate(whole):
        union = sorted(x for rank in per_rank for x in rank[i])
        if len(batch) == batch_size * world_size:
            assert union == sorted(batch)
        else:  # the last global batch is padded with the epoch's first items
            assert set(batch) <= set(union)
    assert {x for rank in per_rank for b in rank for x in b} == set(range(num_items))


def test_shard_errors():
    loader = DataLoaderBuilder(Stack()).batch_size(2).build(InMemDataset(list(range(4))))
    with pytest.raises(ValueError, match="0 <= rank < world_size"):
        loader.shard(2, 2)
    with pytest.raises(ValueError, match="already a shard"):
        loader.shard(0, 2).shard(0, 2)

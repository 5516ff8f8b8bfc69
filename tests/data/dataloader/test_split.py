"""`split_dataloader` (Burn: `burn::data::dataloader::split::split_dataloader`)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.data import split_dataloader
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import FakeDataset, InMemDataset


class ItemsBatcher(Batcher):
    """Burn's test batcher: the items and the device they were batched for."""

    def batch(self, items, device):
        return items, torch.device(device)


def test_burns_split_test_two_devices_five_and_six_items():
    dataset = FakeDataset(11, str, seed=0)
    loader = DataLoaderBuilder(ItemsBatcher()).batch_size(5).build(dataset)
    first, second = split_dataloader(loader, ["cpu", "cpu"])
    assert (first.num_items(), second.num_items()) == (5, 6)
    whole = {item for items, _ in loader.iter() for item in items}
    parts = {item for part in (first, second) for items, _ in part.iter() for item in items}
    assert parts == whole and len(whole) == len(set(dataset.items))


def test_each_part_goes_to_its_device():
    loader = DataLoaderBuilder(ItemsBatcher()).batch_size(2).build(InMemDataset(list(range(6))))
    parts = split_dataloader(loader, ["cpu", "meta"])
    assert [part.device for part in parts] == [torch.device("cpu"), torch.device("meta")]
    assert [device for _, device in parts[1].iter()] == [torch.device("meta")] * 2


def test_one_device_gives_the_loader_itself_and_none_is_an_error():
    loader = DataLoaderBuilder(ItemsBatcher()).build(InMemDataset([1, 2, 3]))
    assert split_dataloader(loader, ["cuda:0"]) == [loader]
    with pytest.raises(ValueError, match=r"at least one device. Received: devices=\[\]"):
        split_dataloader(loader, [])


def test_a_sharded_loader_cannot_be_split():
    loader = DataLoaderBuilder(ItemsBatcher()).build(InMemDataset([1, 2, 3, 4]))
    with pytest.raises(ValueError, match="before sharding"):
        split_dataloader(loader.shard(0, 2), ["cpu", "cpu"])


@settings(max_examples=100, deadline=None)
@given(num_items=st.integers(0, 60), num_devices=st.integers(2, 9), seed=st.integers(0, 99))
def test_parts_are_contiguous_cover_every_item_once_and_keep_the_settings(
    num_items, num_devices, seed
):
    items = list(range(num_items))
    loader = (
        DataLoaderBuilder(ItemsBatcher()).batch_size(4).shuffle(seed).build(InMemDataset(items))
    )
    parts = split_dataloader(loader, ["cpu"] * num_devices)
    step = num_items // num_devices
    sizes = [part.num_items() for part in parts]
    assert sizes == [step] * (num_devices - 1) + [num_items - step * (num_devices - 1)]
    seen = [sorted(item for batch, _ in part.iter() for item in batch) for part in parts]
    assert [item for part in seen for item in part] == items  # contiguous, in order
    assert all(part.seed == seed and part.batch_size == 4 for part in parts)

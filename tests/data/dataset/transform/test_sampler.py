import pickle
from collections import Counter

import pytest

from burnish.data.dataset import InMemDataset, SamplerDataset


def test_size_config_like_burn():
    dataset = InMemDataset(range(10))
    assert len(SamplerDataset(dataset)) == 10
    assert len(SamplerDataset(dataset, 25)) == 25
    assert len(SamplerDataset(dataset, 0.55)) == 5
    with pytest.raises(ValueError, match=r"size ratio must be >= 0"):
        SamplerDataset(dataset, -0.5)
    with pytest.raises(ValueError, match=r"non-empty dataset"):
        SamplerDataset(InMemDataset([]), 3)


def test_with_replacement_draws_uniformly_and_repeats():
    sampler = SamplerDataset.with_replacement(InMemDataset(range(5)), 1000, seed=0)
    assert sampler.is_with_replacement()
    draws = list(sampler)
    assert len(draws) == 1000
    counts = Counter(draws)
    assert set(counts) == set(range(5))
    assert all(150 < count < 250 for count in counts.values())
    assert sampler.get(1000) is None


def test_without_replacement_covers_the_dataset_evenly():
    sampler = SamplerDataset.without_replacement(InMemDataset(range(10)), 25, seed=1)
    assert not sampler.is_with_replacement()
    counts = Counter(sampler)  # one pass: every index twice, plus 5 distinct extra ones
    assert sorted(counts.values()) == [2] * 5 + [3] * 5
    assert sorted(Counter(SamplerDataset(InMemDataset(range(7)), replacement=False))) == list(
        range(7)
    )


def test_get_draws_the_next_item_whatever_the_index():
    sampler = SamplerDataset.without_replacement(InMemDataset(range(50)), 50, seed=2)
    assert len({sampler.get(0) for _ in range(50)}) == 50  # 50 reads of index 0: no repeat


def test_seeded_draws_are_reproducible():
    first = list(SamplerDataset(InMemDataset(range(100)), 30, seed=5))
    second = list(SamplerDataset(InMemDataset(range(100)), 30, seed=5))
    assert first == second
    assert first != list(SamplerDataset(InMemDataset(range(100)), 30, seed=6))


def test_pickles_for_spawned_workers():
    sampler = SamplerDataset(InMemDataset(range(100)), 30, seed=5)
    copy = pickle.loads(pickle.dumps(sampler))
    assert list(copy) == list(sampler)

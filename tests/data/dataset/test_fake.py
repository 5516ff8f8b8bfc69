"""`FakeDataset` (Burn: `FakeDataset::<I>::new(size)`)."""

import enum
from dataclasses import dataclass
from typing import Literal, NamedTuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.data.dataset import FakeDataset


class Colour(enum.Enum):
    RED = 1
    GREEN = 2


class Point(NamedTuple):
    x: float
    y: float


@dataclass
class Sample:
    text: str
    count: int
    ratio: float
    flag: bool
    raw: bytes
    tags: list[str]
    pair: tuple[int, str]
    scores: dict[str, float]
    maybe: int | None
    colour: Colour
    split: Literal["train", "test"]
    point: Point


def _check(sample: Sample) -> None:
    assert isinstance(sample.text, str) and sample.text
    assert isinstance(sample.count, int) and not isinstance(sample.count, bool)
    assert isinstance(sample.ratio, float) and isinstance(sample.flag, bool)
    assert isinstance(sample.raw, bytes)
    assert all(isinstance(tag, str) for tag in sample.tags)
    assert isinstance(sample.pair[0], int) and isinstance(sample.pair[1], str)
    assert all(isinstance(k, str) and isinstance(v, float) for k, v in sample.scores.items())
    assert sample.maybe is None or isinstance(sample.maybe, int)
    assert isinstance(sample.colour, Colour) and sample.split in ("train", "test")
    assert isinstance(sample.point, Point) and isinstance(sample.point.x, float)


@settings(max_examples=50, deadline=None)
@given(size=st.integers(0, 20), seed=st.integers(0, 2**32))
def test_items_have_the_type_and_the_seed_fixes_them(size, seed):
    dataset = FakeDataset(size, Sample, seed=seed)
    assert len(dataset) == size
    for item in dataset:
        _check(item)
    assert FakeDataset(size, Sample, seed=seed).items == dataset.items


def test_burns_default_string_items_and_out_of_range():
    dataset = FakeDataset(11)
    assert len(dataset) == 11 and all(isinstance(item, str) for item in dataset)
    assert dataset.get(11) is None
    assert FakeDataset(0).is_empty()


def test_different_seeds_differ():
    assert FakeDataset(20, int, seed=1).items != FakeDataset(20, int, seed=2).items


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match=r"integer `size` >= 0. Received: size=-1"):
        FakeDataset(-1)
    with pytest.raises(TypeError, match=r"cannot draw a value of type <class 'object'>"):
        FakeDataset(1, object)

    @dataclass
    class Bad:
        value: complex

    with pytest.raises(TypeError, match="complex"):
        FakeDataset(1, Bad)

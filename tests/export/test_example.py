"""The example input: the forward's inputs out of a loader's first batch, for any batch."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.export import ExportError, batch_inputs, example_input
from burnish.export.example import batch_size

from tests.helpers import MnistBatcher, mnist


@dataclasses.dataclass
class Pair:
    features: torch.Tensor
    mask: torch.Tensor


def test_the_forward_inputs_of_each_kind_of_batch() -> None:
    x, y = torch.randn(3, 4), torch.arange(3)
    assert batch_inputs(x)[0] is x
    assert batch_inputs((x, y))[0] is x  # (inputs, targets): a TensorDataset's batch
    assert batch_inputs({"x": x, "y": y}, "x")[0] is x
    pair = Pair(x, y)
    assert batch_inputs(pair, "features")[0] is x
    found = batch_inputs(pair, lambda batch: (batch.features, batch.mask))
    assert found[0] is x and found[1] is y
    with pytest.raises(ExportError, match=r"The batch \(a dict\) has no key 'z'\. Its keys: 'x'"):
        batch_inputs({"x": x}, "z")
    with pytest.raises(ExportError, match=r"Which part of a Pair batch .*\(one of 'features'"):
        batch_inputs(pair)
    with pytest.raises(
        ExportError,
        match=r"taken from the batch's 'mask' must be .* Received: a list of 2 \(int, int\)",
    ):
        batch_inputs({"mask": [1, 2]}, "mask")
    with pytest.raises(ExportError, match="`inputs` must be None, an attribute or key name"):
        batch_inputs(x, 3)  # type: ignore[arg-type]


def test_the_first_batch_of_a_burnish_loader_and_its_epoch_counter_kept() -> None:
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(8).shuffle(3).build(mnist("test"))
    epoch = loader.epoch
    (images,) = example_input(loader, "images")
    assert images.shape == (8, 28, 28) and loader.epoch == epoch
    first = next(iter(loader)).images  # the epoch the example did not use up
    assert torch.equal(images, first)


def test_a_torch_loader_and_an_empty_one() -> None:
    dataset = torch.utils.data.TensorDataset(torch.randn(10, 3), torch.arange(10))
    (x,) = example_input(torch.utils.data.DataLoader(dataset, batch_size=4))
    assert torch.equal(x, dataset.tensors[0][:4])
    empty = DataLoaderBuilder(MnistBatcher()).batch_size(4).build(InMemDataset([]))
    with pytest.raises(ExportError, match="yielded no batch"):
        example_input(empty)
    with pytest.raises(ExportError, match="Received: str"):
        example_input("images")  # type: ignore[arg-type]


values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.sampled_from([0.0, 1e-38, -1e38, math.inf, math.nan]),
)
shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(shapes, values), min_size=0, max_size=3), st.booleans())
def test_any_batch_gives_tensors_and_a_batch_size_or_export_error(tensors, as_tuple) -> None:
    """Empty, scalar, constant, NaN/inf, tiny and huge batches: tensors, or a clear error."""
    batch = [torch.full(shape, value) for shape, value in tensors]
    try:
        found = batch_inputs(tuple(batch) if as_tuple else batch, lambda b: b)
    except ExportError as error:
        assert not batch and "must be a tensor or a tuple" in str(error)
        return
    assert len(found) == len(batch)
    try:
        size = batch_size(found)
    except ExportError as error:
        assert "no common batch dimension" in str(error) or "is empty" in str(error)
        return
    assert size >= 1 and all(t.shape[0] == size for t in found if t.dim())

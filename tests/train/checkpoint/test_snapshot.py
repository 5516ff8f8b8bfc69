"""`host_snapshot`: a record's copy on the host that later in-place updates cannot reach."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.train.checkpoint.snapshot import host_snapshot


def tensors(record):
    if isinstance(record, torch.Tensor):
        yield record
    elif isinstance(record, dict):
        for value in record.values():
            yield from tensors(value)
    elif isinstance(record, (list, tuple)):
        for value in record:
            yield from tensors(value)


def assert_same_values(expected, actual, path="<root>"):
    assert type(expected) is type(actual), path
    if isinstance(expected, torch.Tensor):
        assert actual.device.type == "cpu" and actual.dtype == expected.dtype, path
        assert actual.shape == expected.shape, path
        torch.testing.assert_close(actual, expected.cpu(), rtol=0, atol=0, equal_nan=True)
    elif isinstance(expected, dict):
        assert list(expected) == list(actual), path
        for key in expected:
            assert_same_values(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same_values(e, a, f"{path}[{i}]")
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(actual), path
    else:
        assert expected == actual, path


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def test_in_place_updates_after_the_snapshot_do_not_reach_it():
    weight, moments = torch.ones(3, 2), [torch.zeros(4), torch.arange(3)]
    record = {"model": {"weight": weight, "view": weight[1:]}, "optim": moments, "step": 7}
    snapshot = host_snapshot(record)
    weight.add_(5.0)
    moments[0].fill_(9.0)
    moments.append(torch.ones(1))  # the run's own containers change too
    record["step"] = 8
    assert torch.equal(snapshot["model"]["weight"], torch.ones(3, 2))
    assert torch.equal(snapshot["model"]["view"], torch.ones(2, 2))
    assert torch.equal(snapshot["optim"][0], torch.zeros(4)) and len(snapshot["optim"]) == 2
    assert snapshot["step"] == 7


def test_a_tensor_met_twice_is_copied_once():
    shared = torch.ones(2)
    snapshot = host_snapshot({"a": shared, "b": [shared]})
    assert snapshot["a"] is snapshot["b"][0] and not shares_memory(snapshot["a"], shared)


def test_owned_host_tensors_are_taken_as_they_are():
    """An optimizer's record is its own copy already: no second copy on the host."""
    moments = {"exp_avg": torch.ones(2), "step": 3}
    snapshot = host_snapshot({"state": moments}, owned=True)
    assert shares_memory(snapshot["state"]["exp_avg"], moments["exp_avg"])
    assert snapshot["state"] is not moments


def test_tensors_requiring_grad_come_back_detached():
    parameter = torch.nn.Parameter(torch.ones(2))
    copied = host_snapshot({"w": parameter})["w"]
    assert not copied.requires_grad and torch.equal(copied, torch.ones(2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors_land_in_pinned_host_memory():
    weight = torch.arange(6.0, device="cuda").reshape(2, 3)
    snapshot = host_snapshot({"w": weight, "t": weight.t()})
    weight.mul_(0.0)
    assert snapshot["w"].is_pinned() and snapshot["w"].device.type == "cpu"
    assert torch.equal(snapshot["w"], torch.arange(6.0).reshape(2, 3))
    assert torch.equal(snapshot["t"], torch.arange(6.0).reshape(2, 3).t())


# -- any record -----------------------------------------------------------------------------

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.bool]
FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=32)


@st.composite
def tensor_leaves(draw):
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.sampled_from([(), (0,), (1,), (3,), (2, 3), (1, 0, 2)]))
    count = math.prod(shape)
    if dtype.is_floating_point:
        values = draw(st.lists(FLOATS | st.sampled_from([1e-45, 3e38, -0.0]), min_size=count,
                               max_size=count))  # fmt: skip
    elif dtype == torch.bool:
        values = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    else:
        values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=count, max_size=count))
    return torch.tensor(values, dtype=dtype).reshape(shape)


leaves = (
    tensor_leaves()
    | st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=5)
)
records = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(records, st.booleans())
def test_any_record_is_copied_with_its_values_and_shares_no_memory(record, owned):
    snapshot = host_snapshot(record, owned=owned)
    assert_same_values(record, snapshot)
    if not owned:
        for original in tensors(record):
            assert not any(shares_memory(original, copy) for copy in tensors(snapshot))

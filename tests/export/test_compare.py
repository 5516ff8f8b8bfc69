"""The comparison of an exported file's outputs with the model's: NaN, infinities, tiny and
huge values, shapes and integer outputs."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from burnish.export import Tolerance, default_tolerance
from burnish.export.compare import difference, output_leaves

TOLERANCE = Tolerance(rtol=1e-3, atol=1e-5)
floats = arrays(
    "float32",
    st.tuples(st.integers(0, 4), st.integers(1, 3)),
    elements=st.floats(width=32, allow_nan=True, allow_infinity=True),
)


@settings(max_examples=80, deadline=None)
@given(floats)
def test_outputs_equal_to_the_models_agree_whatever_their_values(values) -> None:
    output = torch.from_numpy(values)
    found = difference([output], [output.clone()], TOLERANCE)
    assert found.mismatch is None and found.largest == 0.0


@settings(max_examples=80, deadline=None)
@given(floats, st.floats(0.0, 0.4))
def test_a_change_within_the_tolerance_agrees_and_one_beyond_it_does_not(values, share) -> None:
    output = torch.from_numpy(values).double()
    finite = output[torch.isfinite(output)]
    if finite.numel() == 0 or not math.isfinite(float(finite.abs().max()) * 1e-3):
        return
    allowed = TOLERANCE.atol + TOLERANCE.rtol * float(finite.abs().max())
    index = int(torch.isfinite(output).flatten().nonzero()[0])
    near, far = output.clone().flatten(), output.clone().flatten()
    near[index] += allowed * share
    far[index] += allowed * 3
    found = difference([output], [near.view_as(output)], TOLERANCE)
    assert found.mismatch is None and found.largest <= found.allowed
    missed = difference([output], [far.view_as(output)], TOLERANCE)
    assert missed.mismatch is not None and "output 0 differs by up to" in missed.mismatch


def test_nan_or_infinity_where_the_model_has_a_number_is_a_mismatch() -> None:
    output = torch.tensor([1.0, 2.0, math.inf])
    for wrong in ([1.0, math.nan, math.inf], [1.0, 2.0, -math.inf], [math.inf, 2.0, math.inf]):
        found = difference([output], [torch.tensor(wrong)], TOLERANCE)
        assert found.mismatch is not None and found.largest == math.inf


def test_shapes_counts_and_integer_outputs() -> None:
    x = torch.zeros(2, 3)
    assert "shape (3, 2) where the model's is (2, 3)" in difference([x], [x.T], TOLERANCE).mismatch
    assert "2 outputs where the model returns 1" in difference([x], [x, x], TOLERANCE).mismatch
    labels = torch.tensor([1, 2, 3])
    assert difference([labels], [labels.clone()], TOLERANCE).mismatch is None
    assert difference([labels], [torch.tensor([1, 2, 4])], TOLERANCE).mismatch is not None


def test_default_tolerance_per_dtype_and_bad_tolerances() -> None:
    assert default_tolerance([torch.zeros(1)]) == Tolerance(rtol=1e-3, atol=1e-5)
    half = [torch.zeros(1), torch.zeros(1, dtype=torch.bfloat16)]
    assert default_tolerance(half).rtol == 5e-2
    assert default_tolerance([torch.zeros(1, dtype=torch.int64)]) == Tolerance(0.0, 0.0)
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match=r"`rtol` must be a finite number >= 0"):
            Tolerance(rtol=bad, atol=0.0)


def test_outputs_are_flattened_as_the_exporters_do_and_others_refused() -> None:
    a, b = torch.zeros(1), torch.ones(1)
    assert output_leaves({"logits": a, "extra": (b,)}) == [a, b]
    with pytest.raises(TypeError, match=r"must return a tensor.*Received: tuple holding str"):
        output_leaves((a, "label"))
    with pytest.raises(TypeError, match="with no tensor"):
        output_leaves(())

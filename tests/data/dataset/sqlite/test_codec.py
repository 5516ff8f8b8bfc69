"""The MessagePack item codec: round trips over any plain value, and hostile blobs."""

import math
import pickle
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from burnish.data.dataset import SqliteDataset, SqliteDatasetError, SqliteDatasetWriter
from burnish.data.dataset.sqlite.codec import decode_item, encode_item

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=30,
)


def _same(a, b):
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


@settings(max_examples=200, deadline=None)
@given(value=values)
def test_plain_values_round_trip(value):
    assert _same(decode_item(encode_item(value), None, "test"), value)


@settings(max_examples=200, deadline=None)
@given(blob=st.binary(max_size=64))
@example(blob=b"\x81\x90\x00")  # a map whose key is an array (unhashable)
@example(blob=b"\xdd\xff\xff\xff\xff")  # an array of 4 billion items in 5 bytes
@example(blob=b"\xc7\x01\x05a")  # an extension type
@example(blob=b"\x92\x01")  # truncated
def test_any_blob_decodes_or_raises_a_dataset_error(blob):
    try:
        decode_item(blob, None, "test")
    except SqliteDatasetError as error:
        assert "test: the item blob is not valid MessagePack" in str(error)


@dataclass
class Record:
    values: np.ndarray
    score: float
    name: str


@settings(max_examples=50, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    score=st.floats(allow_nan=False),
    name=st.text(max_size=10),
)
def test_numpy_fields_round_trip(shape, score, name):
    values = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    decoded = decode_item(encode_item(Record(values, score, name)), Record, "test")
    assert np.array_equal(decoded.values, values) and decoded.values.dtype == np.int64
    assert decoded.score == score and decoded.name == name


def test_an_empty_array_comes_back_flat_as_burns_nested_vecs_carry_no_shape():
    decoded = decode_item(encode_item(Record(np.zeros((0, 3)), 1.0, "")), Record, "test")
    assert decoded.values.shape == (0,)


def test_values_msgpack_cannot_hold_are_refused_on_write():
    with pytest.raises(TypeError, match=r"Cannot serialize the item int"):
        encode_item(2**64)
    with pytest.raises(TypeError, match=r"unsupported value of type object"):
        encode_item([object()])


def test_a_dataset_pickles_without_its_connections(tmp_path):
    """For data loader workers started with `spawn`: the dataset (not its items) is pickled."""
    with SqliteDatasetWriter(tmp_path / "data.db", overwrite=True) as writer:
        writer.write("train", [1, 2])
    dataset = SqliteDataset(tmp_path / "data.db", "train")
    dataset.get(0)
    copy = pickle.loads(pickle.dumps(dataset))
    assert copy.get(0) == [1, 2] and len(copy) == 1

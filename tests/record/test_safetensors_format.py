"""The safetensors format as burnish writes and reads it, checked against the safetensors library.

burnish writes the format itself (streaming tensor views) and reads tensors in place, so
these tests hold it to the library: the same layout on save, the same tensors on load, and
the same refusals of corrupt headers.
"""

from __future__ import annotations

import json
import struct

import pytest
import safetensors
import safetensors.torch
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.testing import assert_close

from burnish.errors import RecordError
from burnish.record import SafetensorsFileRecorder
from burnish.record.formats import safetensors as st_format
from burnish.record.formats.tensor import DTYPES

#: One tensor of every dtype a record holds, with odd sizes so alignment matters.
TENSORS = {
    f"t.{name}": (torch.arange(7 + i) % 3).to(dtype)
    for i, (name, dtype) in enumerate(DTYPES.items())
}
TENSORS["empty"] = torch.zeros(0, 4)
TENSORS["matrix"] = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))


def _split(data: bytes) -> tuple[dict, bytes]:
    (length,) = struct.unpack_from("<Q", data)
    return json.loads(data[8 : 8 + length]), data[8 + length :]


def _library_bytes(tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> bytes:
    specs = {
        name: safetensors.TensorSpec(
            dtype=str(t.dtype).removeprefix("torch."),
            shape=list(t.shape),
            data_ptr=t.data_ptr(),
            data_len=t.numel() * t.element_size(),
        )
        for name, t in tensors.items()
    }
    return bytes(safetensors.serialize(specs, metadata=metadata))


def _ours(tensors: dict[str, torch.Tensor]) -> bytes:
    return SafetensorsFileRecorder().to_bytes(tensors, record_type="dict")


def test_layout_is_the_librarys() -> None:
    # Every dtype as it is (no precision settings): the format level.
    leaves = {name: st_format.TensorLeaf(t, t.dtype) for name, t in TENSORS.items()}
    ours = b"".join(st_format.encode_chunks({"metadata": {"v": 1}, "item": leaves}))
    header, data = _split(ours)
    library = _library_bytes(TENSORS, header["__metadata__"])
    assert (len(ours) - len(data)) % 8 == 0  # the data section starts 8-byte aligned
    assert _split(library) == (header, data)  # same header (offsets, dtypes, order) and bytes


def test_the_library_reads_our_file_and_we_restore_every_dtype(tmp_path) -> None:
    recorder = SafetensorsFileRecorder()  # full precision: floats stored as float32
    path = recorder.record(TENSORS, tmp_path / "all")
    stored = safetensors.torch.load_file(path)
    assert stored["t.bfloat16"].dtype == torch.float32
    assert_close(stored, {k: v.to(stored[k].dtype) for k, v in TENSORS.items()}, atol=0, rtol=0)
    assert_close(recorder.load(path), TENSORS, atol=0, rtol=0)  # dtypes included


def test_we_read_the_librarys_file(tmp_path) -> None:
    safetensors.torch.save_file(TENSORS, tmp_path / "lib.safetensors")
    loaded = SafetensorsFileRecorder().load(tmp_path / "lib.safetensors")
    assert_close(loaded, TENSORS, atol=0, rtol=0)  # dtypes and shapes included


def test_loaded_tensors_are_writable_views_of_one_read() -> None:
    data = _ours({"a": torch.ones(4), "b": torch.zeros(2, dtype=torch.int64)})
    loaded = SafetensorsFileRecorder().from_bytes(data)
    loaded["a"].add_(1)  # no read-only buffer warning or error
    assert loaded["a"].tolist() == [2.0] * 4 and loaded["b"].tolist() == [0, 0]


def test_an_unaligned_foreign_tensor_is_copied_aligned() -> None:
    # Header of odd length: the data section, and the float32 tensor in it, start unaligned.
    header = json.dumps({"x": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}}) + " "
    assert (8 + len(header)) % 4
    data = (
        struct.pack("<Q", len(header))
        + header.encode()
        + torch.tensor([1.0, 2, 3]).numpy().tobytes()
    )
    assert dict(safetensors.deserialize(data))["x"]["shape"] == [3]  # the library accepts it
    loaded = SafetensorsFileRecorder().from_bytes(data)
    assert loaded["x"].tolist() == [1.0, 2.0, 3.0]
    assert loaded["x"].data_ptr() % 4 == 0


def _file(header: dict, payload: bytes) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + payload


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
CORRUPT = {
    "gap between tensors": (
        {"a": F32_2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 20]}},
        bytes(20),
        "leave a gap",
    ),
    "overlapping tensors": (
        {"a": F32_2, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
        bytes(12),
        "overlap",
    ),
    "offsets past the data": (
        {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
        bytes(8),
        "the data section holds 8",
    ),
    "trailing bytes": ({"a": F32_2}, bytes(12), "the data section holds 12"),
    "size not the shape's": (
        {"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},
        bytes(8),
        "needs 12 bytes",
    ),
    "offsets reversed": (
        {"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}},
        bytes(8),
        "no valid `data_offsets`",
    ),
    "offsets not numbers": (
        {"a": {"dtype": "F32", "shape": [2], "data_offsets": ["0", "8"]}},
        bytes(8),
        "no valid `data_offsets`",
    ),
    "unknown dtype": (
        {"a": {"dtype": "F33", "shape": [2], "data_offsets": [0, 8]}},
        bytes(8),
        "dtype 'F33'",
    ),
    "dtype not a string": (
        {"a": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}},
        bytes(8),
        r"dtype \['F32'\]",
    ),
    "negative shape": (
        {"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}},
        bytes(8),
        "shape",
    ),
    "metadata not strings": (
        {"__metadata__": {"format": 1}, "a": F32_2},
        bytes(8),
        "not a map of strings",
    ),
}


@pytest.mark.parametrize("case", CORRUPT, ids=list(CORRUPT))
def test_corrupt_headers_are_refused_like_the_library_does(case: str) -> None:
    header, payload, message = CORRUPT[case]
    data = _file(header, payload)
    with pytest.raises(Exception):
        safetensors.deserialize(data)
    with pytest.raises(RecordError, match=message) as error:
        SafetensorsFileRecorder().from_bytes(data)
    assert "SafetensorsFileRecorder" in str(error.value)


def test_encode_streams_views_of_the_tensors() -> None:
    tensor = torch.arange(1000, dtype=torch.float32)
    record = {"metadata": {}, "item": {"w": st_format.TensorLeaf(tensor, tensor.dtype)}}
    chunks = st_format.encode_chunks(record)
    (view,) = (c for c in chunks if isinstance(c, memoryview))
    assert view.nbytes == 4000
    tensor[0] = 42.0  # the chunk is the tensor's memory, not a copy
    assert view.cast("f")[0] == 42.0


_ENTRY = st.fixed_dictionaries(
    {
        "dtype": st.one_of(st.sampled_from(["F32", "I64", "U8", "BF16", "F8_E4M3"]), st.integers()),
        "shape": st.lists(st.integers(-1, 6), max_size=3),
        "data_offsets": st.one_of(
            st.lists(st.integers(-4, 64), min_size=2, max_size=2),
            st.lists(st.integers(0, 64), max_size=3),
            st.just("0-8"),
        ),
    }
)


@settings(max_examples=60, deadline=None)
@given(
    header=st.dictionaries(st.sampled_from(["a", "b", "c"]), _ENTRY, max_size=3),
    payload=st.integers(0, 64),
)
def test_whatever_the_library_refuses_we_refuse(header: dict, payload: int) -> None:
    data = _file(header, bytes(range(payload)))
    try:
        safetensors.deserialize(data)
        library_ok = True
    except Exception:  # the library's error types vary
        library_ok = False
    try:
        loaded = SafetensorsFileRecorder().from_bytes(data)
    except RecordError:
        return  # refused, with our error type (stricter is fine: e.g. F8 dtypes)
    assert library_ok, f"the library refuses {header} + {payload} bytes; we loaded {loaded}"
    assert set(loaded) == set(header)

"""Hostile Burnpack files: whatever bytes the header and metadata hold, loading answers with
a `RecordError` (never another exception, a hang, or an allocation the file did not pay for),
and nothing in a file is ever executed."""

from __future__ import annotations

import contextlib
import re
import struct

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnish.errors import RecordError
from burnish.record.store import BurnpackStore, burnpack, cbor, load_from, save_into
from burnish.record.store.burnpack import PackReader, PackTensor

VALID = bytearray(
    b"".join(
        bytes(c)
        for c in burnpack.encode_chunks(
            [
                PackTensor.of("weight", torch.arange(6.0).reshape(3, 2), 5),
                PackTensor.of("bias", torch.ones(3)),
            ],
            {"format": "burnpack"},
        )
    )
)
(META_SIZE,) = struct.unpack_from("<I", VALID, 6)


def load(data: bytes | bytearray) -> None:
    reader = PackReader.from_buffer(bytearray(data))
    for name in reader.names():
        reader.tensor(name)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutated_header_and_metadata_load_or_raise_record_error(data):
    mutated = bytearray(VALID)
    for _ in range(data.draw(st.integers(1, 6))):
        position = data.draw(st.integers(0, 10 + META_SIZE - 1))
        mutated[position] = data.draw(st.integers(0, 255))
    with contextlib.suppress(RecordError):
        load(mutated)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_after_the_magic_raise_record_error(tail):
    with contextlib.suppress(RecordError):
        load(burnpack.MAGIC + tail)


documents = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(1 << 63), (1 << 64) - 1)
    | st.floats()
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "tensors",
                    "metadata",
                    "scalars",
                    "dtype",
                    "shape",
                    "data_offsets",
                    "param_id",
                    "w",
                    "F32",
                    "Bool",
                    "UInt",
                ]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(documents, st.integers(0, 2048))
def test_any_metadata_document_loads_or_raises_record_error(document, data_size):
    blob = cbor.encode(document)
    with contextlib.suppress(RecordError):
        load(struct.pack("<IHI", burnpack.MAGIC_NUMBER, 1, len(blob)) + blob + bytes(data_size))


def test_a_huge_tensor_claim_is_refused_before_allocating(tmp_path):
    blob = cbor.encode(
        {"tensors": {"w": {"dtype": "F64", "shape": [1 << 30], "data_offsets": [0, 8 << 30]}}}
    )
    path = tmp_path / "huge.bpk"
    path.write_bytes(struct.pack("<IHI", burnpack.MAGIC_NUMBER, 1, len(blob)) + blob)
    with pytest.raises(RecordError, match=r"'w' ends at byte .* past the end of the file"):
        load_from(torch.nn.Linear(1, 1), BurnpackStore.from_file(path))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "holds 0 bytes; the header alone needs 10"),
        (b"PK\x03\x04" + bytes(20), "Not a Burnpack file"),
        (b"\x80\x04cos\nsystem\n", "Not a Burnpack file"),
    ],
)
def test_other_files_are_named_not_burnpack(tmp_path, content, message):
    path = tmp_path / "model.bpk"
    path.write_bytes(content)
    with pytest.raises(RecordError, match=message):
        load_from(torch.nn.Linear(1, 1), BurnpackStore.from_file(path))


def test_a_pytorch_pickle_that_runs_code_is_refused(tmp_path):
    from burnish.record.store import PytorchStore

    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "evil.pt"
    torch.save({"weight": Exploit()}, path)
    with pytest.raises(RecordError, match=r"Cannot read PyTorch file .* safely"):
        load_from(torch.nn.Linear(1, 1), PytorchStore.from_file(path))
    assert not marker.exists()


def test_a_broken_files_error_names_the_file_and_where_its_metadata_is(tmp_path):
    path = tmp_path / "model.bpk"
    save_into(torch.nn.Linear(3, 2), BurnpackStore.from_file(path))
    whole = path.read_bytes()
    truncated = tmp_path / "truncated.bpk"
    truncated.write_bytes(whole[:300])
    with pytest.raises(RecordError, match=rf"^{re.escape(str(truncated))}: Burnpack tensor .* is"):
        load_from(torch.nn.Linear(3, 2), BurnpackStore.from_file(truncated))
    corrupt = tmp_path / "corrupt.bpk"
    corrupt.write_bytes(whole[:20] + b"\xff" * 20 + whole[40:])
    (size,) = struct.unpack_from("<I", whole, 6)
    with pytest.raises(RecordError, match=rf"metadata is file bytes 10 to {10 + size}; its"):
        PackReader.from_file(corrupt)

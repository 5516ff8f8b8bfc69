"""Hostile files: every loader answers with a RecordError, quickly and in bounded memory."""

from __future__ import annotations

import contextlib
import gzip
import io
import struct
import zlib

import msgpack
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnish.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    PyTorchFileRecorder,
    RecordError,
    SafetensorsFileRecorder,
)
from burnish.record.formats import bin as bin_format

RECORDERS = {
    "mpk": DefaultRecorder,
    "mpk.gz": NamedMpkGzFileRecorder,
    "bin": BinFileRecorder,
    "bin.gz": BinGzFileRecorder,
    "json": PrettyJsonFileRecorder,
    "json.gz": JsonGzFileRecorder,
    "safetensors": SafetensorsFileRecorder,
}
RECORD = {"w": torch.arange(6.0).reshape(2, 3), "step": 3, "l": [1, "a", None]}


def load_bytes(name: str, data: bytes):
    return RECORDERS[name]().from_bytes(data)


@pytest.mark.parametrize("name", RECORDERS)
def test_empty_file(tmp_path, name):
    recorder = RECORDERS[name]()
    path = tmp_path / f"x.{recorder.file_extension}"
    path.write_bytes(b"")
    with pytest.raises(RecordError, match=r"x\..*found an empty file"):
        recorder.load(path)


@pytest.mark.parametrize("name", RECORDERS)
def test_every_truncation_is_refused(name):
    data = RECORDERS[name]().to_bytes(RECORD)
    for end in sorted({1, 2, 8, 9, 16, len(data) // 2, len(data) - 8, len(data) - 1}):
        with pytest.raises(RecordError, match="Cannot load bytes"):
            load_bytes(name, data[:end])


@pytest.mark.parametrize("name", RECORDERS)
def test_garbage(name):
    with pytest.raises(RecordError):
        load_bytes(name, bytes(range(256)) * 4)


def test_pytorch_import_refuses_garbage_and_pickles(tmp_path):
    (tmp_path / "g.pt").write_bytes(b"not a pickle at all")
    with pytest.raises(RecordError, match="found unknown data"):
        PyTorchFileRecorder().load(tmp_path / "g.pt")

    class Evil:
        def __reduce__(self):
            return (exec, ("raise SystemExit('pwned')",))

    torch.save({"w": torch.ones(1), "evil": Evil()}, tmp_path / "evil.pt")
    with pytest.raises(RecordError, match=r"weights_only"):
        PyTorchFileRecorder().load(tmp_path / "evil.pt")


def test_msgpack_claiming_a_huge_length():
    # a map with one key whose bin32 value claims 4 GiB
    data = b"\x82\xa8metadata\xc6\xff\xff\xff\xff" + b"\0" * 32
    with pytest.raises(RecordError, match="Invalid MessagePack data"):
        load_bytes("mpk", data)
    # an array claiming 2**32 - 1 elements
    with pytest.raises(RecordError, match="Invalid MessagePack data"):
        load_bytes("mpk", b"\x81\xa4item\xdd\xff\xff\xff\xff\xc0")


def test_tensor_extension_claiming_a_huge_shape():
    header = struct.pack("<BBB", 8, 8, 2) + struct.pack("<2Q", 2**31, 2**31)
    tensor = msgpack.ExtType(0x42, header + b"\0" * 16)
    data = msgpack.packb({"metadata": {}, "item": {"w": tensor}})
    with pytest.raises(RecordError, match=r"holds 16 data bytes; expected 18446744073709551616"):
        load_bytes("mpk", data)


def test_binary_header_claiming_a_huge_length():
    data = bin_format.MAGIC + struct.pack("<QQ", 2**63, 0) + b"\0" * 64
    with pytest.raises(RecordError, match=r"header claims 9223372036854775808 bytes"):
        load_bytes("bin", data)


def test_binary_tensor_offset_past_the_end():
    good = BinFileRecorder().to_bytes({"w": torch.ones(4)})
    # the last 16 bytes of data are the tensor; chop the data section
    with pytest.raises(RecordError, match=r"should be .* bytes long"):
        load_bytes("bin", good[: len(good) - 64])
    # a tensor reference pointing past the end of a (consistent) data section
    ref = struct.pack("<BBB", 8, 8, 1) + struct.pack("<QQ", 4, 64)
    envelope = {"metadata": {}, "item": {"w": msgpack.ExtType(bin_format.TENSOR_REF_EXT, ref)}}
    header = msgpack.packb(envelope)
    prefix = bin_format.MAGIC + struct.pack("<QQ", len(header), 64) + header
    blob = prefix + b"\0" * (-len(prefix) % 64) + b"\0" * 64
    with pytest.raises(RecordError, match="needs 16 bytes, but the file holds 0"):
        load_bytes("bin", blob)


def test_wrong_magic():
    data = bytearray(BinFileRecorder().to_bytes(RECORD))
    data[1:8] = b"NOTBURN"
    with pytest.raises(RecordError, match="found unknown data"):
        load_bytes("bin", bytes(data))


def test_safetensors_header_claiming_a_huge_length():
    data = struct.pack("<Q", 2**40) + b'{"a": 1}'
    with pytest.raises(RecordError):
        load_bytes("safetensors", data)


@pytest.mark.parametrize("name", ["mpk", "json", "safetensors"])
def test_deeply_nested_data(name):
    if name == "mpk":
        inner = b"\x91" * 200_000 + b"\xc0"
        data = b"\x82\xa8metadata\x80\xa4item" + inner
    elif name == "json":
        data = b'{"metadata": {}, "item": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    else:
        structure = '{"metadata": {}, "item": ' + "[" * 5000 + "]" * 5000 + "}"
        meta = {"burnish.metadata": "{}", "burnish.structure": structure}
        import safetensors

        data = bytes(safetensors.serialize({}, metadata=meta))
    with pytest.raises(RecordError, match=r"nested|corrupt|metadata"):
        load_bytes(name, data)


@pytest.mark.parametrize("name", ["mpk.gz", "bin.gz", "json.gz"])
def test_gzip_bomb_stops_at_the_limit(tmp_path, name):
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9, mtime=0) as file:
        zeros = b"\0" * (1 << 20)
        for _ in range(64):  # 64 MiB of zeros in ~64 KiB
            file.write(zeros)
    recorder = RECORDERS[name](max_decompressed_bytes=1 << 20)
    path = tmp_path / f"bomb.{recorder.file_extension}"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(RecordError, match=r"more than max_decompressed_bytes=1048576"):
        recorder.load(path)


def test_gzip_trailing_garbage_and_corruption():
    data = NamedMpkGzFileRecorder().to_bytes(RECORD)
    with pytest.raises(RecordError, match="followed by extra bytes"):
        load_bytes("mpk.gz", data + b"junk")
    broken = bytearray(data)
    broken[20] ^= 0xFF
    with pytest.raises(RecordError):
        load_bytes("mpk.gz", bytes(broken))
    with pytest.raises(RecordError, match="Invalid gzip data"):
        load_bytes("mpk.gz", b"\x1f\x8b" + zlib.compress(b"x"))


@pytest.mark.parametrize("name", RECORDERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_random_and_mutated_bytes(name, data):
    valid = RECORDERS[name]().to_bytes(RECORD)
    choice = data.draw(st.sampled_from(["random", "flip", "splice", "truncate"]))
    if choice == "random":
        blob = data.draw(st.binary(max_size=512))
    elif choice == "truncate":
        blob = valid[: data.draw(st.integers(0, len(valid)))]
    else:
        blob = bytearray(valid)
        for _ in range(data.draw(st.integers(1, 8))):
            index = data.draw(st.integers(0, len(blob) - 1))
            if choice == "flip":
                blob[index] = data.draw(st.integers(0, 255))
            else:
                blob[index : index + 4] = data.draw(st.binary(min_size=0, max_size=8))
        blob = bytes(blob)
    with contextlib.suppress(RecordError):  # a mutation may leave a valid record: fine
        load_bytes(name, blob)


@settings(max_examples=30, deadline=None)
@given(blob=st.binary(max_size=256))
def test_fuzz_pytorch_import(tmp_path_factory, blob):
    path = tmp_path_factory.mktemp("fuzz") / "x.pt"
    path.write_bytes(blob)
    with contextlib.suppress(RecordError):
        PyTorchFileRecorder().load(path)

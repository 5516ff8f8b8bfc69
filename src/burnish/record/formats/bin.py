"""Binary records: a magic, a MessagePack header with the record tree, then aligned raw tensors.

Layout: `MAGIC` (12 bytes), header length and data length (uint64 LE each), header
(MessagePack envelope whose tensors are extension type `TENSOR_REF_EXT`: tensor header +
uint64 offset into the data section), zero padding to a multiple of `ALIGN`, then each
tensor's raw little-endian bytes at an `ALIGN`-aligned offset. Loading reads the file once;
tensors are views into that buffer.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from burnish.errors import RecordError
from burnish.record.formats import mpk
from burnish.record.formats.tensor import TensorLeaf, tensor_from_buffer, tensor_view

__all__ = ["ALIGN", "MAGIC", "TENSOR_REF_EXT", "decode", "encode", "encode_chunks"]

MAGIC = b"\x89BURNISH\r\n\x1a\n"
ALIGN = 64
TENSOR_REF_EXT = 0x43
_LENGTH = struct.Struct("<Q")
_PREFIX = len(MAGIC) + 2 * _LENGTH.size


def encode(envelope: dict[str, Any]) -> bytes:
    """Lay out an envelope as a binary record."""
    return b"".join(encode_chunks(envelope))


def encode_chunks(envelope: dict[str, Any]) -> list[bytes | memoryview]:
    """The binary record as chunks; tensor data are views of the tensors (no copy)."""
    blobs: list[bytes | memoryview] = []
    offset = 0

    def default(value: Any) -> Any:
        nonlocal offset
        if not isinstance(value, TensorLeaf):
            raise TypeError(f"cannot pack {type(value).__name__}")
        raw = tensor_view(value.data)
        ref = mpk.encode_tensor_header(value) + _LENGTH.pack(offset)
        padding = -raw.nbytes % ALIGN
        blobs.append(raw)
        if padding:
            blobs.append(b"\0" * padding)
        offset += raw.nbytes + padding
        return msgpack.ExtType(TENSOR_REF_EXT, ref)

    header = msgpack.packb(envelope, default=default, use_bin_type=True)
    prefix = MAGIC + _LENGTH.pack(len(header)) + _LENGTH.pack(offset) + header
    return [prefix + b"\0" * (-len(prefix) % ALIGN), *blobs]


def decode(data: bytearray) -> Any:
    """Parse a binary record; tensors are views into `data` (keep it writable)."""
    if len(data) < _PREFIX or data[: len(MAGIC)] != MAGIC:
        raise RecordError("Binary record does not start with the burnish magic bytes.")
    (length,) = _LENGTH.unpack_from(data, len(MAGIC))
    (data_length,) = _LENGTH.unpack_from(data, len(MAGIC) + _LENGTH.size)
    if length > len(data) - _PREFIX:
        raise RecordError(
            f"Binary record header claims {length} bytes, but the file holds only "
            f"{len(data) - _PREFIX} after the magic: it is truncated or corrupt."
        )
    start = _PREFIX + length
    start += -start % ALIGN
    if start + data_length != len(data):
        raise RecordError(
            f"Binary record should be {start + data_length} bytes long (header and data "
            f"lengths), but the file holds {len(data)}: it is truncated or corrupt."
        )
    section = memoryview(data)[start:]

    def ext_hook(code: int, payload: bytes) -> TensorLeaf:
        if code != TENSOR_REF_EXT:
            raise RecordError(
                f"Unknown extension type {code} in binary record header; expected "
                f"{TENSOR_REF_EXT} (tensor reference). The file is corrupt."
            )
        stored, source, shape, size = mpk.decode_tensor_header(payload)
        if len(payload) != size + _LENGTH.size:
            raise RecordError("Tensor reference has the wrong size: the file is corrupt.")
        (offset,) = _LENGTH.unpack_from(payload, size)
        return TensorLeaf(tensor_from_buffer(section, stored, shape, offset), source)

    return mpk.unpack(bytes(memoryview(data)[_PREFIX : _PREFIX + length]), ext_hook)

"""MessagePack records: the record tree as named MessagePack, tensors as an extension type.

A tensor is the extension type `TENSOR_EXT` whose payload is a little-endian header
(stored dtype code, recorded dtype code, ndim, ndim x uint64 dims) followed by the raw
little-endian element bytes.
"""

from __future__ import annotations

import struct
from typing import Any

import msgpack

from burnish.errors import RecordError
from burnish.record.formats.tensor import (
    DTYPES,
    MAX_NDIM,
    TensorLeaf,
    dtype_name,
    tensor_from_buffer,
    tensor_view,
)

__all__ = [
    "TENSOR_EXT",
    "decode",
    "decode_tensor_header",
    "encode",
    "encode_chunks",
    "encode_tensor_header",
    "unpack",
]

TENSOR_EXT = 0x42
_CODES = {name: code for code, name in enumerate(DTYPES)}
_DTYPE_LIST = list(DTYPES.values())
_HEAD = struct.Struct("<BBB")


def encode_tensor_header(leaf: TensorLeaf) -> bytes:
    """The fixed header describing a tensor: dtype codes and shape."""
    shape = leaf.data.shape
    stored = _CODES[dtype_name(leaf.data.dtype)]
    source = _CODES[dtype_name(leaf.source_dtype)]
    return _HEAD.pack(stored, source, len(shape)) + struct.pack(f"<{len(shape)}Q", *shape)


def decode_tensor_header(payload: bytes | memoryview) -> tuple[Any, Any, tuple[int, ...], int]:
    """Parse a tensor header: returns (stored dtype, recorded dtype, shape, header size).

    Raises:
        RecordError: for an unknown dtype code, too many dims or a truncated header.
    """
    if len(payload) < _HEAD.size:
        raise RecordError("Tensor header is truncated: the file is corrupt.")
    stored, source, ndim = _HEAD.unpack_from(payload)
    if stored >= len(_DTYPE_LIST) or source >= len(_DTYPE_LIST) or ndim > MAX_NDIM:
        raise RecordError(
            f"Tensor header has dtype codes ({stored}, {source}) and {ndim} dims; expected "
            f"codes below {len(_DTYPE_LIST)} and at most {MAX_NDIM} dims. The file is corrupt "
            "or was written by a newer burnish."
        )
    size = _HEAD.size + 8 * ndim
    if len(payload) < size:
        raise RecordError("Tensor header is truncated: the file is corrupt.")
    shape = struct.unpack_from(f"<{ndim}Q", payload, _HEAD.size)
    return _DTYPE_LIST[stored], _DTYPE_LIST[source], shape, size


def encode(envelope: dict[str, Any]) -> bytes:
    """Pack an envelope as MessagePack."""
    return bytes(encode_chunks(envelope)[0])


def encode_chunks(envelope: dict[str, Any]) -> list[memoryview]:
    """Pack an envelope; the one chunk is the packer's own buffer (not copied into `bytes`)."""
    packer = msgpack.Packer(
        default=_default, use_bin_type=True, strict_types=False, autoreset=False
    )
    packer.pack(envelope)
    return [packer.getbuffer()]


def _default(value: Any) -> Any:
    if isinstance(value, TensorLeaf):  # one copy: the tensor's memory into the extension
        return msgpack.ExtType(TENSOR_EXT, encode_tensor_header(value) + tensor_view(value.data))
    raise TypeError(f"cannot pack {type(value).__name__}")  # prepare() rejected it already


def decode(data: bytes | bytearray) -> Any:
    """Unpack a MessagePack record file into an envelope of `TensorLeaf`s."""
    return unpack(data, _tensor_ext)


def unpack(data: bytes | bytearray, ext_hook: Any) -> Any:
    """`msgpack.unpackb` with strict settings; maps every failure to `RecordError`."""
    try:
        return msgpack.unpackb(
            data, raw=False, ext_hook=ext_hook, strict_map_key=True, use_list=True
        )
    except RecordError:
        raise
    except msgpack.StackError:
        raise RecordError("MessagePack data is nested too deeply: the file is hostile.") from None
    except msgpack.ExtraData:
        raise RecordError(
            "MessagePack data is followed by extra bytes: the file is corrupt."
        ) from None
    except (ValueError, TypeError, msgpack.UnpackException, UnicodeDecodeError) as error:
        message = str(error) or type(error).__name__
        raise RecordError(f"Invalid MessagePack data ({message}): the file is corrupt.") from None


def _tensor_ext(code: int, payload: bytes) -> TensorLeaf:
    if code != TENSOR_EXT:
        raise RecordError(
            f"Unknown MessagePack extension type {code}; expected {TENSOR_EXT} (tensor). The "
            "file is corrupt or was written by a newer burnish."
        )
    stored, source, shape, size = decode_tensor_header(payload)
    expected = size + _numel(shape) * stored.itemsize
    if len(payload) != expected:
        raise RecordError(
            f"Tensor of shape {list(shape)} and dtype {dtype_name(stored)} holds "
            f"{len(payload) - size} data bytes; expected {expected - size}. The file is corrupt."
        )
    buffer = bytearray(memoryview(payload)[size:])
    return TensorLeaf(tensor_from_buffer(buffer, stored, shape), source)


def _numel(shape: tuple[int, ...]) -> int:
    numel = 1
    for dim in shape:
        numel *= dim
    return numel

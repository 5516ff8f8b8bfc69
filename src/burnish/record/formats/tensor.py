"""Tensors as raw little-endian bytes + dtype + shape: the one tensor codec every format uses."""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from typing import cast

import torch

from burnish.errors import RecordError

__all__ = [
    "DTYPES",
    "MAX_NDIM",
    "TensorLeaf",
    "check_shape",
    "dtype_from_name",
    "dtype_name",
    "tensor_bytes",
    "tensor_from_buffer",
    "tensor_view",
]

#: Every dtype a record can hold, by its stable on-disk name. The position is the binary code.
DTYPES: dict[str, torch.dtype] = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "uint16": torch.uint16,
    "uint32": torch.uint32,
    "uint64": torch.uint64,
}
_NAMES = {dtype: name for name, dtype in DTYPES.items()}
MAX_NDIM = 64


@dataclasses.dataclass
class TensorLeaf:
    """A tensor as a format stores it.

    Attributes:
        data: contiguous CPU tensor in the stored dtype.
        source_dtype: the dtype the tensor had when recorded, restored on load.
    """

    data: torch.Tensor
    source_dtype: torch.dtype


def dtype_name(dtype: torch.dtype) -> str:
    """The on-disk name of `dtype`.

    Raises:
        RecordError: for dtypes a record cannot hold (complex, quantized, float8, ...).
    """
    try:
        return _NAMES[dtype]
    except KeyError:
        raise RecordError(
            f"A record cannot hold tensors of dtype {dtype}. Supported: {', '.join(DTYPES)}. "
            "Cast the tensor (e.g. `.float()`) before recording it."
        ) from None


def dtype_from_name(name: object, where: str = "") -> torch.dtype:
    """Parse an on-disk dtype name; a `RecordError` names `where` for an unknown one."""
    if isinstance(name, str) and name in DTYPES:
        return DTYPES[name]
    raise RecordError(
        f"Unknown tensor dtype {name!r}{_at(where)}; expected one of {', '.join(DTYPES)}. "
        "The file is corrupt or was written by a newer burnish."
    )


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """The raw little-endian bytes of a contiguous CPU tensor (one copy)."""
    flat = tensor.reshape(-1)
    if flat.numel() == 0:
        return b""
    raw = flat.view(torch.uint8)
    if sys.byteorder == "big" and tensor.element_size() > 1:  # pragma: no cover - rare hosts
        raw = raw.view(-1, tensor.element_size()).flip(1).reshape(-1)
    return raw.numpy().tobytes()


def tensor_view(tensor: torch.Tensor) -> memoryview:
    """The raw little-endian bytes of a contiguous CPU tensor, without a copy."""
    if sys.byteorder == "big" and tensor.element_size() > 1:  # pragma: no cover - rare hosts
        return memoryview(tensor_bytes(tensor))
    if tensor.numel() == 0:
        return memoryview(b"")
    # ndarray has the buffer protocol; numpy's stubs declare `__buffer__` on Python >= 3.12 only.
    return memoryview(tensor.reshape(-1).view(torch.uint8).numpy())  # type: ignore[arg-type]


def tensor_from_buffer(
    buffer: bytearray | memoryview,
    dtype: torch.dtype,
    shape: list[int] | tuple[int, ...],
    offset: int = 0,
    where: str = "",
) -> torch.Tensor:
    """A tensor over `buffer[offset:]` (no copy when `buffer` is writable), checked for size.

    Raises:
        RecordError: if the shape is invalid or the buffer holds too few bytes.
    """
    shape = check_shape(shape, where)
    numel = math.prod(shape)
    nbytes = numel * dtype.itemsize
    available = len(buffer) - offset
    if offset < 0 or nbytes > available:
        raise RecordError(
            f"Tensor{_at(where)} of shape {list(shape)} and dtype {dtype_name(dtype)} needs "
            f"{nbytes} bytes, but the file holds {max(available, 0)} there: it is truncated "
            "or corrupt."
        )
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    tensor = torch.frombuffer(buffer, dtype=dtype, count=numel, offset=offset)
    if sys.byteorder == "big" and tensor.element_size() > 1:  # pragma: no cover - rare hosts
        raw = tensor.view(torch.uint8).view(-1, tensor.element_size()).flip(1)
        tensor = raw.contiguous().view(dtype).reshape(-1)
    return tensor.view(shape)


def check_shape(shape: object, where: str = "") -> tuple[int, ...]:
    """Validate a decoded shape: a list of at most `MAX_NDIM` non-negative ints."""
    ok = (
        isinstance(shape, (list, tuple))
        and len(shape) <= MAX_NDIM
        and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d < 2**62 for d in shape)
    )
    if not ok:
        raise RecordError(
            f"Invalid tensor shape {_short(shape)}{_at(where)}: expected a list of at most "
            f"{MAX_NDIM} non-negative integers. The file is corrupt."
        )
    return tuple(cast("Sequence[int]", shape))  # checked above


def _at(where: str) -> str:
    return f" at `{where}`" if where else ""


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."

"""Writing a Burnpack container: its bytes as chunks, each tensor copied to the host only
when reached (`burnpack.py` describes the format)."""

from __future__ import annotations

import dataclasses
import math
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from burnish.errors import RecordError
from burnish.record.formats.tensor import tensor_view
from burnish.record.store import cbor
from burnish.record.store.burnpack_format import (
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC_NUMBER,
    TENSOR_ALIGNMENT,
    aligned_data_section_start,
    burn_dtype,
)

__all__ = ["PackTensor", "encode_chunks"]


@dataclasses.dataclass(frozen=True)
class PackTensor:
    """One tensor of a container, its bytes produced only when the writer reaches it.

    Attributes:
        name: the full path, e.g. `"encoder.0.weight"`.
        dtype: the torch dtype (see `DTYPES`).
        shape: the shape.
        param_id: Burn's `ParamId` (a u64), or None.
        data_fn: produces the tensor (any device: it is copied to the CPU when written).
    """

    name: str
    dtype: torch.dtype
    shape: tuple[int, ...]
    param_id: int | None
    data_fn: Callable[[], torch.Tensor]

    @classmethod
    def of(cls, name: str, tensor: torch.Tensor, param_id: int | None = None) -> PackTensor:
        """An entry for a tensor in hand."""
        return cls(name, tensor.dtype, tuple(tensor.shape), param_id, lambda: tensor)


def encode_chunks(
    tensors: Sequence[PackTensor],
    metadata: dict[str, str] | None = None,
    scalars: dict[str, bool | int | float] | None = None,
) -> Iterator[bytes | memoryview]:
    """The container as chunks: header, metadata, padding, then each tensor's bytes.

    Each tensor is copied to the CPU only when its chunk is reached and released after it,
    so writing a model holds at most one tensor's host copy at a time.

    Raises:
        RecordError: for duplicate names or a dtype Burnpack cannot hold (before any byte).
    """
    blob, placements = _plan(tensors, metadata or {}, scalars or {})
    yield struct.pack("<IHI", MAGIC_NUMBER, FORMAT_VERSION, len(blob))
    yield blob
    written = aligned_data_section_start(len(blob))
    yield bytes(written - HEADER_SIZE - len(blob))
    offset = 0
    for tensor, start in zip(tensors, placements, strict=True):
        if start > offset:
            yield bytes(start - offset)
        data = _host(tensor)
        view = tensor_view(data)
        yield view
        offset = start + view.nbytes


def _host(entry: PackTensor) -> torch.Tensor:
    data = entry.data_fn().detach()
    if data.dtype != entry.dtype or tuple(data.shape) != entry.shape:
        raise RecordError(
            f"Tensor {entry.name!r} was planned as {entry.dtype} {list(entry.shape)} but "
            f"produced {data.dtype} {list(data.shape)} while being written."
        )
    if data.dtype == torch.bool:
        data = data.to(torch.uint8)  # Bool(Native) is one byte per value, 0 or 1
    return data.to("cpu").contiguous()


def _plan(
    tensors: Sequence[PackTensor], metadata: dict[str, str], scalars: dict[str, Any]
) -> tuple[bytes, list[int]]:
    descriptors: dict[str, dict[str, Any]] = {}
    placements = []
    offset = 0
    for tensor in tensors:
        if tensor.name in descriptors:
            raise RecordError(
                f"Two tensors are named {tensor.name!r}: Burnpack names must be unique. "
                "Rename one (e.g. with `with_key_remapping`)."
            )
        start = -(-offset // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT
        end = start + math.prod(tensor.shape) * _stored_size(tensor.dtype)
        name = burn_dtype(tensor.dtype, tensor.name)
        entry: dict[str, Any] = {
            "dtype": {"Bool": "Native"} if name == "Bool" else name,
            "shape": list(tensor.shape),
            "data_offsets": [start, end],
        }
        if tensor.param_id is not None:
            entry["param_id"] = _u64(tensor.param_id, tensor.name)
        descriptors[tensor.name] = entry
        placements.append(start)
        offset = end
    document: dict[str, Any] = {"tensors": dict(sorted(descriptors.items()))}
    if metadata:
        document["metadata"] = {str(k): str(v) for k, v in sorted(metadata.items())}
    if scalars:
        document["scalars"] = {k: _scalar(v, k) for k, v in sorted(scalars.items())}
    blob = cbor.encode(document)
    if len(blob) > 0xFFFFFFFF:
        raise RecordError(f"Burnpack metadata is {len(blob)} bytes; the header holds 4 GiB.")
    return blob, placements


def _stored_size(dtype: torch.dtype) -> int:
    return 1 if dtype == torch.bool else dtype.itemsize


def _u64(value: int, name: str) -> int:
    if not 0 <= value < 1 << 64:
        raise RecordError(f"param_id of {name!r} must be a u64; received {value}.")
    return value


def _scalar(value: Any, name: str) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"Bool": value}
    if isinstance(value, int):
        return {"Int": value} if value < 0 else {"UInt": value}
    if isinstance(value, float):
        return {"Float": value}
    raise RecordError(f"Scalar {name!r} must be a bool, int or float; received {value!r}.")

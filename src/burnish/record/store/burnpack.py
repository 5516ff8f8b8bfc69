"""The Burnpack container (Burn's `burn-pack` crate, format version 1), byte for byte.

```text
header    10 bytes   magic u32 LE 0x4255524E ("NRUB" on disk), version u16 LE, metadata size u32 LE
metadata  CBOR       {"tensors": {name: {"dtype", "shape", "data_offsets": [start, end],
                      "param_id"?}}, "metadata"?: {str: str}, "scalars"?: {str: {"Int"|...: v}}}
padding   to the next multiple of 256 bytes
data      each tensor's little-endian bytes at a 256-byte aligned offset (relative to data)
```

Descriptors are sorted by name (Burn's `BTreeMap`); data is written in the order given. Reading
checks every claim before trusting it (Burn's limits: metadata <= 100 MiB, <= 100,000 tensors,
<= 10 GiB a tensor, CBOR depth <= 128; plus burnish's: each tensor's bytes match its shape and
dtype and lie inside the file) and maps the file instead of reading it.
"""

from __future__ import annotations

import dataclasses
import math
import mmap
import os
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import torch

from burnish.errors import RecordError
from burnish.record.formats.tensor import MAX_NDIM, tensor_view
from burnish.record.store import cbor

__all__ = [
    "DTYPES",
    "FORMAT_VERSION",
    "HEADER_SIZE",
    "MAGIC",
    "MAGIC_NUMBER",
    "MAX_FILE_SIZE",
    "MAX_METADATA_SIZE",
    "MAX_TENSOR_COUNT",
    "MAX_TENSOR_SIZE",
    "TENSOR_ALIGNMENT",
    "PackReader",
    "PackTensor",
    "aligned_data_section_start",
    "burn_dtype",
    "encode_chunks",
    "looks_like",
]

MAGIC_NUMBER = 0x4255524E
MAGIC = struct.pack("<I", MAGIC_NUMBER)  # b"NRUB"
FORMAT_VERSION = 1
HEADER_SIZE = 10
TENSOR_ALIGNMENT = 256
MAX_METADATA_SIZE = 100 * 1024 * 1024
MAX_TENSOR_SIZE = 10 * 1024**3
MAX_TENSOR_COUNT = 100_000
MAX_FILE_SIZE = 100 * 1024**3

#: Burn's `DType`s burnish reads and writes, as serde/CBOR writes them, with their torch dtype.
DTYPES: dict[str, torch.dtype] = {
    "F64": torch.float64, "F32": torch.float32, "Flex32": torch.float32, "F16": torch.float16,
    "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
    "I8": torch.int8, "U64": torch.uint64, "U32": torch.uint32, "U16": torch.uint16,
    "U8": torch.uint8, "Bool": torch.bool,
}  # fmt: skip
#: How each `Bool(BoolStore)` is stored: one byte (`Native`, `U8`) or four (`U32`).
_BOOL_STORES = {"Native": torch.uint8, "U8": torch.uint8, "U32": torch.uint32}
_TORCH_TO_BURN = {dtype: name for name, dtype in DTYPES.items() if name != "Flex32"}
_SCALARS = {"Int": int, "UInt": int, "Float": float, "Bool": bool}


def aligned_data_section_start(metadata_size: int) -> int:
    """Where the data section starts: header + metadata, rounded up to 256 bytes."""
    return -(-(HEADER_SIZE + metadata_size) // TENSOR_ALIGNMENT) * TENSOR_ALIGNMENT


def burn_dtype(dtype: torch.dtype, where: str = "") -> str:
    """Burn's `DType` name for a torch dtype.

    Raises:
        RecordError: for dtypes Burn has no equivalent of (complex, float8, ...).
    """
    try:
        return _TORCH_TO_BURN[dtype]
    except KeyError:
        raise RecordError(
            f"Burnpack cannot hold tensors of dtype {dtype}{_at(where)}; it holds "
            f"{', '.join(_TORCH_TO_BURN.values())} (as torch {', '.join(map(str, DTYPES.values()))}"
            "). Cast the tensor first."
        ) from None


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


@dataclasses.dataclass(frozen=True)
class Descriptor:
    """A tensor's entry in the metadata."""

    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int
    param_id: int | None
    bool_store: str | None = None

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]


# -- writing -------------------------------------------------------------------------------


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


def looks_like(data: bytes | bytearray) -> bool:
    """Whether `data` starts with Burnpack's magic."""
    return bytes(data[:4]) == MAGIC


# -- reading -------------------------------------------------------------------------------


class PackReader:
    """A validated container: its metadata now, its tensors as views when asked.

    `from_file` maps the file (copy-on-write, nothing read until touched); `from_buffer`
    reads from bytes already in memory. Tensors are views of the mapping or buffer.
    """

    def __init__(self, buffer: Any, size: int, source: str) -> None:
        self.source = source
        self._buffer = buffer
        try:
            self._validate(size)
        except RecordError as error:
            if source == "<bytes>":
                raise
            raise RecordError(f"{source}: {error}") from None  # say which file

    def _validate(self, size: int) -> None:
        buffer = self._buffer
        header = _header(bytes(buffer[:HEADER_SIZE]), size)
        metadata_end = HEADER_SIZE + header
        if metadata_end > size:
            raise RecordError(
                f"Burnpack header claims {header} bytes of metadata, but the file holds "
                f"{size - HEADER_SIZE} after the header: it is truncated or corrupt."
            )
        try:
            document = cbor.decode(bytes(buffer[HEADER_SIZE:metadata_end]))
        except RecordError as error:
            raise RecordError(
                f"{error} (The metadata is file bytes {HEADER_SIZE} to {metadata_end}; its "
                "offsets count from its start.)"
            ) from None
        self.data_start = aligned_data_section_start(header)
        self.descriptors, self.metadata, self.scalars = _check_document(document)
        for name, descriptor in self.descriptors.items():
            if self.data_start + descriptor.end > size:
                raise RecordError(
                    f"Burnpack tensor {name!r} ends at byte {self.data_start + descriptor.end}, "
                    f"past the end of the file ({size} bytes): it is truncated."
                )

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> PackReader:
        """Open and validate a file; tensors will be views of a private memory map.

        Raises:
            RecordError: if the file is missing, too large, or not a valid Burnpack.
        """
        path = Path(path)
        try:
            with open(path, "rb") as file:
                size = os.fstat(file.fileno()).st_size
                if size > MAX_FILE_SIZE:
                    raise RecordError(
                        f"{str(path)!r} is {size} bytes; Burnpack files are limited to "
                        f"{MAX_FILE_SIZE} bytes (Burn's MAX_FILE_SIZE)."
                    )
                if size < HEADER_SIZE:
                    return cls(file.read(), size, str(path))
                mapping = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
        except OSError as error:
            raise RecordError(f"Cannot read Burnpack file {str(path)!r}: {error}") from None
        return cls(mapping, size, str(path))

    @classmethod
    def from_buffer(
        cls, data: bytes | bytearray | memoryview, source: str = "<bytes>"
    ) -> PackReader:
        """Validate a container held in memory (a writable buffer gives views, not copies)."""
        return cls(data, len(data), source)

    def names(self) -> list[str]:
        """Tensor names, sorted."""
        return list(self.descriptors)

    def tensor(self, name: str) -> torch.Tensor:
        """The tensor `name` as stored (a view of the file when aligned, else a copy)."""
        descriptor = self.descriptors[name]
        start = self.data_start + descriptor.start
        count = math.prod(descriptor.shape)
        if descriptor.dtype == "Bool":
            dtype = _BOOL_STORES[descriptor.bool_store or "Native"]
        else:
            dtype = descriptor.torch_dtype
        if count == 0:
            tensor = torch.empty(descriptor.shape, dtype=dtype)
        elif start % dtype.itemsize == 0 and not memoryview(self._buffer).readonly:
            tensor = torch.frombuffer(self._buffer, dtype=dtype, count=count, offset=start)
        else:
            raw = bytearray(self._buffer[start : start + count * dtype.itemsize])
            tensor = torch.frombuffer(raw, dtype=dtype, count=count)
        if sys.byteorder == "big" and dtype.itemsize > 1:  # pragma: no cover - rare hosts
            tensor = (
                tensor.view(torch.uint8).view(-1, dtype.itemsize).flip(1).contiguous().view(dtype)
            )
        tensor = tensor.view(descriptor.shape)
        return tensor != 0 if descriptor.dtype == "Bool" else tensor

    def release(self, name: str) -> None:
        """Drop the mapped pages of `name` from memory (it is re-read if touched again)."""
        if not isinstance(self._buffer, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
            return
        descriptor = self.descriptors[name]
        page = mmap.PAGESIZE
        start = -(-(self.data_start + descriptor.start) // page) * page
        end = (self.data_start + descriptor.end) // page * page
        if end > start:
            self._buffer.madvise(mmap.MADV_DONTNEED, start, end - start)


def _header(head: bytes, size: int) -> int:
    if len(head) < HEADER_SIZE:
        raise RecordError(
            f"Burnpack file holds {size} bytes; the header alone needs {HEADER_SIZE}. "
            "The file is truncated or not a Burnpack file."
        )
    magic, version, metadata_size = struct.unpack("<IHI", head)
    if magic != MAGIC_NUMBER:
        raise RecordError(
            f"Not a Burnpack file: it starts with {head[:4]!r}, Burnpack files with {MAGIC!r} "
            "(magic 0x4255524E)."
        )
    if version > FORMAT_VERSION:
        raise RecordError(
            f"Burnpack format version {version} is newer than this burnish reads "
            f"({FORMAT_VERSION}). Upgrade burnish."
        )
    if metadata_size > MAX_METADATA_SIZE:
        raise RecordError(
            f"Burnpack header claims {metadata_size} bytes of metadata; at most "
            f"{MAX_METADATA_SIZE} are accepted. The file is corrupt or hostile."
        )
    return int(metadata_size)


def _check_document(
    document: Any,
) -> tuple[dict[str, Descriptor], dict[str, str], dict[str, bool | int | float]]:
    if not isinstance(document, dict) or not isinstance(document.get("tensors"), dict):
        raise RecordError(
            "Burnpack metadata must be a map with a `tensors` map; received "
            f"{_short(document)}. The file is corrupt."
        )
    tensors = document["tensors"]
    if len(tensors) > MAX_TENSOR_COUNT:
        raise RecordError(
            f"Burnpack file lists {len(tensors)} tensors; at most {MAX_TENSOR_COUNT} are "
            "accepted. The file is corrupt or hostile."
        )
    metadata = document.get("metadata", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise RecordError(f"Burnpack `metadata` must map strings to strings; received "
                          f"{_short(metadata)}.")  # fmt: skip
    descriptors = {name: _descriptor(name, tensors[name]) for name in sorted(tensors)}
    return descriptors, metadata, _scalars(document.get("scalars", {}))


def _descriptor(name: str, entry: Any) -> Descriptor:
    if not isinstance(entry, dict):
        raise _bad(name, "is not a map", entry)
    dtype, bool_store = _dtype(name, entry.get("dtype"))
    shape = entry.get("shape")
    if not (
        isinstance(shape, list)
        and len(shape) <= MAX_NDIM
        and all(_is_uint(d) and d < 1 << 62 for d in shape)
    ):
        raise _bad(name, f"has shape {_short(shape)}, not a list of <= {MAX_NDIM} sizes", entry)
    offsets = entry.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_uint, offsets))):
        raise _bad(name, f"has data_offsets {_short(offsets)}, not [start, end]", entry)
    start, end = offsets
    if end < start:
        raise _bad(name, f"ends (byte {end}) before it starts (byte {start})", entry)
    if end - start > MAX_TENSOR_SIZE:
        raise _bad(name, f"claims {end - start} bytes, over the {MAX_TENSOR_SIZE} limit", entry)
    itemsize = 4 if bool_store == "U32" else 1 if dtype == "Bool" else DTYPES[dtype].itemsize
    needed = math.prod(shape) * itemsize
    if end - start != needed:
        raise _bad(name, f"spans {end - start} bytes, but shape {shape} of {dtype} needs "
                   f"{needed}", entry)  # fmt: skip
    param_id = entry.get("param_id")
    if param_id is not None and not (_is_uint(param_id) and param_id < 1 << 64):
        raise _bad(name, f"has param_id {_short(param_id)}, not a u64", entry)
    return Descriptor(dtype, tuple(shape), start, end, param_id, bool_store)


def _dtype(name: str, value: Any) -> tuple[str, str | None]:
    if isinstance(value, str) and value in DTYPES and value != "Bool":
        return value, None
    if isinstance(value, dict) and len(value) == 1 and value.get("Bool") in _BOOL_STORES:
        return "Bool", value["Bool"]
    if isinstance(value, dict) and "QFloat" in value:
        raise RecordError(
            f"Burnpack tensor {name!r} is quantized (QFloat); burnish does not load quantized "
            "tensors. Dequantize it in Burn before saving."
        )
    known = ", ".join(k for k in DTYPES if k != "Bool")
    raise RecordError(
        f"Burnpack tensor {name!r} has dtype {_short(value)}; burnish reads {known} and "
        "Bool(Native|U8|U32). The file is corrupt or from a newer Burn."
    )


def _scalars(value: Any) -> dict[str, bool | int | float]:
    if not isinstance(value, dict):
        raise RecordError(f"Burnpack `scalars` must be a map; received {_short(value)}.")
    result: dict[str, bool | int | float] = {}
    for key, entry in value.items():
        ok = isinstance(entry, dict) and len(entry) == 1
        variant, scalar = next(iter(entry.items())) if ok else (None, None)
        kind = _SCALARS.get(variant) if isinstance(variant, str) else None
        if kind is None or (type(scalar) is not kind and not (kind is float and _is_int(scalar))):
            raise RecordError(
                f"Burnpack scalar {key!r} is {_short(entry)}; expected one of "
                "{'Int': i64}, {'UInt': u64}, {'Float': f64}, {'Bool': bool}."
            )
        result[key] = cast("bool | int | float", scalar)
    return result


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_uint(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _bad(name: str, what: str, entry: Any) -> RecordError:
    return RecordError(f"Burnpack tensor {name!r} {what} (descriptor {_short(entry)}). The file "
                       "is corrupt.")  # fmt: skip


def _at(where: str) -> str:
    return f" (tensor {where!r})" if where else ""


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

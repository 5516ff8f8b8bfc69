"""Reading a Burnpack container: every claim checked before it is trusted, the file mapped
rather than read (`burnpack.py` describes the format and the limits)."""

from __future__ import annotations

import math
import mmap
import os
import struct
import sys
from pathlib import Path
from typing import Any, cast

import torch

from burnish.errors import RecordError
from burnish.record.formats.tensor import MAX_NDIM
from burnish.record.store import cbor
from burnish.record.store.burnpack_format import (
    BOOL_STORES,
    DTYPES,
    FORMAT_VERSION,
    HEADER_SIZE,
    MAGIC,
    MAGIC_NUMBER,
    MAX_FILE_SIZE,
    MAX_METADATA_SIZE,
    MAX_TENSOR_COUNT,
    MAX_TENSOR_SIZE,
    SCALAR_KINDS,
    Descriptor,
    aligned_data_section_start,
)

__all__ = ["PackReader"]


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
            dtype = BOOL_STORES[descriptor.bool_store or "Native"]
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
    if isinstance(value, dict) and len(value) == 1 and value.get("Bool") in BOOL_STORES:
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
        kind = SCALAR_KINDS.get(variant) if isinstance(variant, str) else None
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


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

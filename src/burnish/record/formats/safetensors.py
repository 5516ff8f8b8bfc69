"""Safetensors records: readable by every safetensors tool, nested records kept in the header.

Tensors are stored under their flat record path (`encoder.0.weight`, `state.3.exp_avg`). The
burnish metadata and, for nested records, the record's structure (with non-tensor values) go
in the safetensors `__metadata__` as JSON strings, so `safetensors.torch.load_file` reads the
tensors and `SafetensorsFileRecorder` rebuilds the exact record. Files written by other tools
load as a flat `{name: tensor}` dict.

The format (an 8-byte header length, a JSON header, the tensors' bytes) is written and read
here rather than through the safetensors library's `serialize`/`deserialize`, which copy every
tensor into Python `bytes` (twice on load): saving streams views of the tensors to the file,
loading makes tensors over the bytes read. The tests check both directions against the
library, and the header is checked as strictly as the library checks it.
"""

from __future__ import annotations

import json
import math
import struct
from typing import Any

from burnish.errors import RecordError
from burnish.record.formats import json as json_format
from burnish.record.formats.tensor import (
    DTYPES,
    TensorLeaf,
    check_shape,
    dtype_from_name,
    dtype_name,
    tensor_from_buffer,
    tensor_view,
)
from burnish.record.tree import check_depth, join

__all__ = ["METADATA_KEY", "STRUCTURE_KEY", "decode", "encode", "encode_chunks", "looks_like"]

METADATA_KEY = "burnish.metadata"
STRUCTURE_KEY = "burnish.structure"
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
_REF = "$ref"
#: In the order of the library's `Dtype` enum, whose reverse orders the tensors in a file.
_ST_DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
    "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32",
    "F64": "float64", "I64": "int64", "U64": "uint64",
}  # fmt: skip
_ST_TORCH = {st_name: DTYPES[name] for st_name, name in _ST_DTYPES.items()}
_ST_NAMES = {dtype: st_name for st_name, dtype in _ST_TORCH.items()}
_ST_RANK = {dtype: rank for rank, dtype in enumerate(_ST_TORCH.values())}


def encode(envelope: dict[str, Any]) -> bytes:
    """Serialize an envelope; its item's tensors become flat-named safetensors tensors."""
    return b"".join(encode_chunks(envelope))


def encode_chunks(envelope: dict[str, Any]) -> list[bytes | memoryview]:
    """The file as chunks: length, header, then each tensor's bytes as a view (no copy).

    The layout is the safetensors library's: tensors sorted by dtype (the library's order, in
    which element sizes only decrease, so each tensor stays aligned), then by name; the
    header padded with spaces to a multiple of 8 bytes.
    """
    leaves: dict[str, TensorLeaf] = {}
    structure = _skeleton(envelope["item"], "", leaves)
    metadata = {"format": "pt", METADATA_KEY: json.dumps(envelope["metadata"])}
    flat = isinstance(structure, dict) and all(
        isinstance(v, dict) and set(v) == {_REF} and v[_REF] == k for k, v in structure.items()
    )
    if not flat or any(leaf.source_dtype != leaf.data.dtype for leaf in leaves.values()):
        metadata[STRUCTURE_KEY] = json_format.encode({"metadata": {}, "item": structure}).decode()
    order = sorted(leaves, key=lambda name: (-_ST_RANK[leaves[name].data.dtype], name))
    header: dict[str, Any] = {"__metadata__": metadata}
    offset = 0
    for name in order:
        data = leaves[name].data
        end = offset + data.numel() * data.element_size()
        header[name] = {
            "dtype": _ST_NAMES[data.dtype],
            "shape": list(data.shape),
            "data_offsets": [offset, end],
        }
        offset = end
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return [struct.pack("<Q", len(text)), text, *(tensor_view(leaves[n].data) for n in order)]


def _skeleton(value: Any, path: str, leaves: dict[str, TensorLeaf]) -> Any:
    if isinstance(value, TensorLeaf):
        if path in leaves or not path:
            raise RecordError(
                f"Two tensors of the record share the safetensors name `{path or '<root>'}` "
                "(a key containing '.' collides with a nested one). Rename one, or use a "
                "MessagePack recorder."
            )
        leaves[path] = value
        ref: dict[str, Any] = {_REF: path}
        if value.source_dtype != value.data.dtype:
            ref["source_dtype"] = dtype_name(value.source_dtype)
        return ref
    if isinstance(value, dict):
        if _REF in value:
            raise RecordError(
                f"Record dict at `{path or '<root>'}` uses the key '{_REF}', which safetensors "
                "records reserve. Rename the key or use a MessagePack recorder."
            )
        return {k: _skeleton(v, join(path, k), leaves) for k, v in value.items()}
    if isinstance(value, list):
        return [_skeleton(v, join(path, str(i)), leaves) for i, v in enumerate(value)]
    return value


def looks_like(data: bytes | bytearray) -> bool:
    """Whether `data` starts like a safetensors file (length prefix, then a JSON object)."""
    if len(data) < 9:
        return False
    (length,) = struct.unpack_from("<Q", data)
    return length <= len(data) - 8 and data[8:9] == b"{"


def decode(data: bytearray) -> dict[str, Any]:
    """Parse a safetensors file into an envelope (metadata is `{}` for foreign files).

    Tensors are views of `data` (no copy); the header is checked as strictly as the
    safetensors library does: known dtypes, sizes that match the shapes, and offsets that
    tile the data section exactly.
    """
    header, start = _header(data)
    extra = header.pop("__metadata__", None) or {}
    if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
        raise RecordError("Safetensors `__metadata__` is not a map of strings: it is corrupt.")
    tensors = _tensors(header, data, start)
    if METADATA_KEY not in extra:
        return {"metadata": {}, "item": tensors}
    metadata = _json_field(extra, METADATA_KEY)
    if STRUCTURE_KEY not in extra:
        return {"metadata": metadata, "item": tensors}
    structure = json_format.decode(extra[STRUCTURE_KEY].encode())
    if not isinstance(structure, dict) or "item" not in structure:
        raise RecordError(f"Safetensors metadata `{STRUCTURE_KEY}` is not a record structure.")
    structure = structure["item"]
    return {"metadata": metadata, "item": _rebuild(structure, tensors, "", 0)}


def _header(data: bytearray) -> tuple[dict[str, Any], int]:
    """The header as a dict, and where the data section starts."""
    if len(data) < 8:
        raise RecordError(f"Safetensors file holds {len(data)} bytes; it needs at least 8.")
    (length,) = struct.unpack_from("<Q", data)
    if length > min(len(data) - 8, MAX_HEADER):
        raise RecordError(
            f"Safetensors header claims {length} bytes, but the file holds {len(data) - 8} "
            f"after the length (and headers are limited to {MAX_HEADER}): it is corrupt."
        )
    try:
        header = json.loads(bytes(data[8 : 8 + length]).decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise RecordError(f"Invalid safetensors header ({error}): the file is corrupt.") from None
    if not isinstance(header, dict):
        raise RecordError("Safetensors header is not a JSON object: the file is corrupt.")
    return header, 8 + length


def _tensors(header: dict[str, Any], data: bytearray, start: int) -> dict[str, TensorLeaf]:
    spans = sorted((_span(name, entry), name) for name, entry in header.items())
    end = 0
    for (begin, stop), name in spans:
        if begin != end:
            raise RecordError(
                f"Tensor `{name}` starts at byte {begin} of the data, but the previous one "
                f"ends at {end}: the offsets overlap or leave a gap, so the file is corrupt."
            )
        end = stop
    if end != len(data) - start:
        raise RecordError(
            f"The tensors cover {end} bytes, but the data section holds {len(data) - start}: "
            "the file is truncated or corrupt."
        )
    return {name: _tensor(name, header[name], data, start) for name in header}


def _span(name: str, entry: Any) -> tuple[int, int]:
    offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in offsets)
        and 0 <= offsets[0] <= offsets[1]
    ):
        raise RecordError(
            f"Tensor `{name}` has no valid `data_offsets` ([begin, end] byte offsets): the "
            "file is corrupt."
        )
    return offsets[0], offsets[1]


def _json_field(extra: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(extra[key])
    except (TypeError, ValueError, RecursionError):
        raise RecordError(f"Safetensors metadata `{key}` is not valid JSON.") from None


def _tensor(name: str, entry: dict[str, Any], data: bytearray, start: int) -> TensorLeaf:
    st_dtype = entry.get("dtype")
    dtype = _ST_TORCH.get(st_dtype) if isinstance(st_dtype, str) else None
    if dtype is None:
        raise RecordError(
            f"Tensor `{name}` has safetensors dtype {st_dtype!r}, which burnish does "
            f"not load; supported: {', '.join(_ST_DTYPES)}."
        )
    begin, end = entry["data_offsets"]
    shape = check_shape(entry.get("shape"), name)
    if end - begin != math.prod(shape) * dtype.itemsize:
        raise RecordError(
            f"Tensor `{name}` of shape {list(shape)} and dtype {entry['dtype']} needs "
            f"{math.prod(shape) * dtype.itemsize} bytes, but its offsets span {end - begin}: "
            "the file is corrupt."
        )
    tensor = tensor_from_buffer(data, dtype, shape, offset=start + begin, where=name)
    if (start + begin) % dtype.itemsize:  # a foreign file's unaligned tensor: copy it aligned
        tensor = tensor.clone()
    return TensorLeaf(tensor, tensor.dtype)


def _rebuild(value: Any, tensors: dict[str, TensorLeaf], path: str, depth: int) -> Any:
    check_depth(depth, path)
    if isinstance(value, dict) and _REF in value:
        name = value[_REF]
        if not isinstance(name, str) or name not in tensors:
            raise RecordError(
                f"Record structure refers to tensor {name!r} at `{path}`, which the file "
                "does not hold: the file is corrupt."
            )
        leaf = tensors[name]
        if "source_dtype" in value:
            leaf = TensorLeaf(leaf.data, dtype_from_name(value["source_dtype"], path))
        return leaf
    if isinstance(value, dict):
        return {k: _rebuild(v, tensors, join(path, k), depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebuild(v, tensors, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    return value

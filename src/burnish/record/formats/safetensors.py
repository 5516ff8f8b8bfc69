"""Safetensors records: readable by every safetensors tool, nested records kept in the header.

Tensors are stored under their flat record path (`encoder.0.weight`, `state.3.exp_avg`). The
burnish metadata and, for nested records, the record's structure (with non-tensor values) go
in the safetensors `__metadata__` as JSON strings, so `safetensors.torch.load_file` reads the
tensors and `SafetensorsFileRecorder` rebuilds the exact record. Files written by other tools
load as a flat `{name: tensor}` dict.
"""

from __future__ import annotations

import json
import struct
from typing import Any

import safetensors

from burnish.errors import RecordError
from burnish.record.formats import json as json_format
from burnish.record.formats.tensor import (
    DTYPES,
    TensorLeaf,
    dtype_from_name,
    dtype_name,
    tensor_from_buffer,
)
from burnish.record.tree import check_depth, join

__all__ = ["METADATA_KEY", "STRUCTURE_KEY", "decode", "encode", "looks_like"]

METADATA_KEY = "burnish.metadata"
STRUCTURE_KEY = "burnish.structure"
MAX_HEADER = 100 * 1024 * 1024  # safetensors' own limit
_REF = "$ref"
_ST_DTYPES = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "I32": "int32",
    "I64": "int64", "F16": "float16", "BF16": "bfloat16", "F32": "float32", "F64": "float64",
    "U16": "uint16", "U32": "uint32", "U64": "uint64",
}  # fmt: skip


def encode(envelope: dict[str, Any]) -> bytes:
    """Serialize an envelope; its item's tensors become flat-named safetensors tensors."""
    leaves: dict[str, TensorLeaf] = {}
    structure = _skeleton(envelope["item"], "", leaves)
    specs = {
        name: safetensors.TensorSpec(
            dtype=dtype_name(leaf.data.dtype),
            shape=list(leaf.data.shape),
            data_ptr=leaf.data.data_ptr(),
            data_len=leaf.data.numel() * leaf.data.element_size(),
        )
        for name, leaf in leaves.items()
    }
    metadata = {"format": "pt", METADATA_KEY: json.dumps(envelope["metadata"])}
    flat = isinstance(structure, dict) and all(
        isinstance(v, dict) and set(v) == {_REF} and v[_REF] == k for k, v in structure.items()
    )
    if not flat or any(leaf.source_dtype != leaf.data.dtype for leaf in leaves.values()):
        metadata[STRUCTURE_KEY] = json_format.encode({"metadata": {}, "item": structure}).decode()
    return bytes(safetensors.serialize(specs, metadata=metadata))


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


def decode(data: bytes | bytearray) -> dict[str, Any]:
    """Parse a safetensors file into an envelope (metadata is `{}` for foreign files)."""
    header = _header(data)
    try:
        raw = safetensors.deserialize(bytes(data))
    except Exception as error:  # SafetensorError and friends: a corrupt file
        raise RecordError(f"Invalid safetensors data ({error}): the file is corrupt.") from None
    tensors = {name: _tensor(name, entry) for name, entry in raw}
    extra = header.get("__metadata__") or {}
    if not isinstance(extra, dict) or METADATA_KEY not in extra:
        return {"metadata": {}, "item": tensors}
    metadata = _json_field(extra, METADATA_KEY)
    if STRUCTURE_KEY not in extra:
        return {"metadata": metadata, "item": tensors}
    structure = json_format.decode(str(extra[STRUCTURE_KEY]).encode())
    if not isinstance(structure, dict) or "item" not in structure:
        raise RecordError(f"Safetensors metadata `{STRUCTURE_KEY}` is not a record structure.")
    structure = structure["item"]
    return {"metadata": metadata, "item": _rebuild(structure, tensors, "", 0)}


def _header(data: bytes | bytearray) -> dict[str, Any]:
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
    return header


def _json_field(extra: dict[str, Any], key: str) -> Any:
    try:
        return json.loads(extra[key])
    except (TypeError, ValueError, RecursionError):
        raise RecordError(f"Safetensors metadata `{key}` is not valid JSON.") from None


def _tensor(name: str, entry: dict[str, Any]) -> TensorLeaf:
    dtype = _ST_DTYPES.get(entry["dtype"])
    if dtype is None:
        raise RecordError(
            f"Tensor `{name}` has safetensors dtype {entry['dtype']}, which burnish does not "
            f"load; supported: {', '.join(_ST_DTYPES)}."
        )
    tensor = tensor_from_buffer(entry["data"], DTYPES[dtype], entry["shape"], where=name)
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

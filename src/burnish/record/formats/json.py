"""JSON records: human-readable, tensors as `{"$tensor": {dtype, shape, data}}` objects.

Tensor data is the flat list of element values (`"nan"`, `"inf"`, `"-inf"` for non-finite
floats, so files stay standard JSON); a non-finite Python float is `{"$float": "nan"}`.
The keys `$tensor` and `$float` are reserved: a record dict may not use them.
"""

from __future__ import annotations

import json
import math
from typing import Any

import torch

from burnish.errors import RecordError
from burnish.record.formats.tensor import (
    TensorLeaf,
    check_shape,
    dtype_from_name,
    dtype_name,
)
from burnish.record.tree import check_depth, join

__all__ = ["decode", "encode"]

_TENSOR, _FLOAT = "$tensor", "$float"
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def encode(envelope: dict[str, Any], indent: int | None = None) -> bytes:
    """Dump an envelope as JSON (pretty with `indent`, compact without)."""
    tree = {"metadata": envelope["metadata"], "item": _to_json(envelope["item"], "")}
    separators = (",", ": ") if indent else (",", ":")
    text = json.dumps(tree, indent=indent, separators=separators, allow_nan=False)
    return text.encode("utf-8")


def _to_json(value: Any, path: str) -> Any:
    if isinstance(value, TensorLeaf):
        return {_TENSOR: _tensor_to_json(value)}
    if isinstance(value, float) and not math.isfinite(value):
        return {_FLOAT: repr(value)}
    if isinstance(value, dict):
        reserved = {_TENSOR, _FLOAT} & set(value)
        if reserved:
            raise RecordError(
                f"Record dict at `{path or '<root>'}` uses the key {reserved.pop()!r}, which "
                "JSON records reserve for tensors and non-finite floats. Rename the key or use "
                "a MessagePack recorder."
            )
        return {k: _to_json(v, join(path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_json(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value


def _tensor_to_json(leaf: TensorLeaf) -> dict[str, Any]:
    data = leaf.data
    values = data.reshape(-1).tolist()
    if data.is_floating_point() and not bool(torch.isfinite(data).all()):
        values = [v if math.isfinite(v) else repr(v) for v in values]
    entry: dict[str, Any] = {"dtype": dtype_name(data.dtype), "shape": list(data.shape)}
    if leaf.source_dtype != data.dtype:
        entry["source_dtype"] = dtype_name(leaf.source_dtype)
    entry["data"] = values
    return entry


def decode(data: bytes | bytearray) -> Any:
    """Parse a JSON record into an envelope of `TensorLeaf`s."""
    try:
        tree = json.loads(bytes(data).decode("utf-8"))
    except RecursionError:
        raise RecordError("JSON data is nested too deeply: the file is hostile.") from None
    except UnicodeDecodeError as error:
        raise RecordError(f"JSON record is not UTF-8 text ({error.reason}).") from None
    except ValueError as error:  # JSONDecodeError, int digits limit
        raise RecordError(f"Invalid JSON ({error}): the file is corrupt.") from None
    return _from_json(tree, "", 0)


def _from_json(value: Any, path: str, depth: int) -> Any:
    check_depth(depth, path)
    if isinstance(value, dict):
        if _TENSOR in value and len(value) == 1:
            return _tensor_from_json(value[_TENSOR], path)
        if _FLOAT in value and len(value) == 1:
            return _float_from_json(value[_FLOAT], path)
        return {k: _from_json(v, join(path, k), depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    return value


def _float_from_json(text: Any, path: str) -> float:
    if text in _NONFINITE:
        return _NONFINITE[text]
    raise RecordError(f"Invalid non-finite float {text!r} at `{path}`: expected nan, inf or -inf.")


def _tensor_from_json(entry: Any, path: str) -> TensorLeaf:
    if not isinstance(entry, dict) or not {"dtype", "shape", "data"} <= set(entry):
        raise RecordError(
            f"Invalid tensor at `{path}`: expected an object with dtype, shape and data."
        )
    dtype = dtype_from_name(entry["dtype"], path)
    source = dtype_from_name(entry.get("source_dtype", entry["dtype"]), path)
    shape = check_shape(entry["shape"], path)
    values = entry["data"]
    numel = math.prod(shape)
    if not isinstance(values, list) or len(values) != numel:
        count = len(values) if isinstance(values, list) else type(values).__name__
        raise RecordError(
            f"Tensor at `{path}` of shape {list(shape)} needs {numel} values; found {count}."
        )
    try:
        tensor = torch.tensor(_numbers(values, dtype), dtype=dtype)
    except (TypeError, ValueError, RuntimeError, OverflowError) as error:
        raise RecordError(
            f"Tensor at `{path}` has invalid {dtype_name(dtype)} values ({error})."
        ) from None
    return TensorLeaf(tensor.reshape(shape), source)


def _numbers(values: list[Any], dtype: torch.dtype) -> list[Any]:
    if not any(isinstance(v, (str, list, dict)) or v is None for v in values):
        return values
    if not dtype.is_floating_point:
        raise TypeError("expected numbers")
    try:
        return [_NONFINITE[v] if isinstance(v, str) else v for v in values]
    except (KeyError, TypeError):
        raise TypeError("expected numbers or 'nan', 'inf', '-inf'") from None

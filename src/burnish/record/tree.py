"""Walk a record: validate it and apply precision settings on save, restore dtypes on load.

A record is a nested structure of `dict[str, ...]`, `list`, `torch.Tensor`, `int`, `float`,
`bool`, `str` and `None`. Tuples are recorded as lists; NumPy arrays and scalars are accepted
and come back as tensors and Python numbers.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from burnish.errors import RecordError
from burnish.record.formats.tensor import TensorLeaf, dtype_name
from burnish.record.settings import PrecisionSettings

__all__ = ["MAX_DEPTH", "check_depth", "check_tree", "flatten", "join", "prepare", "restore"]

#: Deepest nesting a record may have (a model's record is a handful of levels deep).
MAX_DEPTH = 100
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_NARROWABLE = (torch.int16, torch.int32, torch.int64)


def prepare(record: Any, settings: PrecisionSettings | None) -> Any:
    """Copy `record` with every tensor replaced by a `TensorLeaf` in the settings' precision.

    With `settings=None` tensors keep their dtype (used for imports).

    Raises:
        RecordError: naming the path of a value a record cannot hold, a non-string dict key,
            or nesting deeper than `MAX_DEPTH`.
    """
    return _prepare(record, settings, "", 0)


def _prepare(value: Any, settings: PrecisionSettings | None, path: str, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise RecordError(
            f"Record is nested deeper than {MAX_DEPTH} levels at `{path}`. Flatten it."
        )
    if isinstance(value, torch.Tensor):
        return _leaf(value, settings, path)
    if isinstance(value, np.ndarray):
        return _leaf(torch.from_numpy(np.ascontiguousarray(value)), settings, path)
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, float, str)):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise RecordError(
                f"Record value at `{path or '<root>'}` is the integer {value}, outside the "
                "64-bit range a record holds. Store it as a string or a tensor."
            )
        return int(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise RecordError(
                    f"Record dict at `{path or '<root>'}` has the key {key!r} of type "
                    f"{type(key).__name__}; record keys must be str. Convert it, e.g. str(key)."
                )
            out[key] = _prepare(item, settings, join(path, key), depth + 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_prepare(v, settings, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    raise RecordError(
        f"Record value at `{path or '<root>'}` has type {type(value).__name__}, which a record "
        "cannot hold. Records hold dict[str, ...], list, tensor, int, float, bool, str and "
        "None: convert it (e.g. to a tensor or a list) first."
    )


def _leaf(tensor: torch.Tensor, settings: PrecisionSettings | None, path: str) -> TensorLeaf:
    if tensor.layout != torch.strided or tensor.is_quantized or tensor.device.type == "meta":
        raise RecordError(
            f"Tensor at `{path or '<root>'}` is {tensor.layout}/{tensor.device.type}"
            f"{' quantized' if tensor.is_quantized else ''}; a record holds dense tensors "
            "with data. Convert it with `.to_dense()` / `.dequantize()` first."
        )
    source = tensor.dtype
    dtype_name(source)  # rejects unsupported dtypes with a clear message
    data = tensor.detach()
    if settings is None:
        data = data.to("cpu")
    elif data.is_floating_point():
        data = _narrow_float(data.to("cpu"), settings.float_dtype)
    else:
        data = data.to("cpu")
        if _fits_narrower(data, settings.int_dtype):
            data = data.to(settings.int_dtype)
    return TensorLeaf(data.contiguous(), source)


def _narrow_float(data: torch.Tensor, float_dtype: torch.dtype) -> torch.Tensor:
    """Cast to `float_dtype`, unless that would turn finite values into inf (keep them then)."""
    cast = data.to(float_dtype)
    if float_dtype.itemsize >= data.dtype.itemsize or data.numel() == 0:
        return cast
    low, high = (float(x) for x in torch.aminmax(cast))
    if -math.inf < low and high < math.inf:  # one pass: no inf at all (NaN fails: look closer)
        return cast
    if int(torch.isinf(cast).sum()) != int(torch.isinf(data).sum()):
        return data
    return cast


def _fits_narrower(data: torch.Tensor, int_dtype: torch.dtype) -> bool:
    """Whether an int tensor is wider than `int_dtype` and every value fits in it."""
    if data.dtype not in _NARROWABLE or data.element_size() <= int_dtype.itemsize:
        return False
    if data.numel() == 0:
        return True
    info = torch.iinfo(int_dtype)
    low, high = torch.aminmax(data)
    return info.min <= int(low) and int(high) <= info.max


def restore(tree: Any, device: torch.device | str | None) -> Any:
    """Turn decoded `TensorLeaf`s back into tensors of their recorded dtype, on `device`."""
    if isinstance(tree, TensorLeaf):
        return tree.data.to(device=device or "cpu", dtype=tree.source_dtype)
    if isinstance(tree, dict):
        return {key: restore(value, device) for key, value in tree.items()}
    if isinstance(tree, list):
        return [restore(value, device) for value in tree]
    return tree


def check_depth(depth: int, path: str) -> None:
    """Raise a `RecordError` when decoded data nests deeper than `MAX_DEPTH`."""
    if depth > MAX_DEPTH:
        raise RecordError(
            f"Record data is nested deeper than {MAX_DEPTH} levels at `{path}`: the file is "
            "corrupt or hostile."
        )


def join(path: str, key: str) -> str:
    """`a.b` style path of a record entry (used in error messages and flat keys)."""
    return f"{path}.{key}" if path else key


def check_tree(tree: Any, path: str = "", depth: int = 0) -> None:
    """Check a decoded tree holds only record values under str keys, at bounded depth.

    Raises:
        RecordError: naming the first offending path.
    """
    check_depth(depth, path)
    if isinstance(tree, dict):
        for key, value in tree.items():
            if not isinstance(key, str):
                raise RecordError(
                    f"Record dict at `{path or '<root>'}` has a {type(key).__name__} key; "
                    "record keys are str. The file is corrupt."
                )
            check_tree(value, join(path, key), depth + 1)
    elif isinstance(tree, list):
        for index, value in enumerate(tree):
            check_tree(value, f"{path}[{index}]", depth + 1)
    elif not (tree is None or isinstance(tree, (TensorLeaf, bool, int, float, str))):
        raise RecordError(
            f"Record value at `{path or '<root>'}` is a {type(tree).__name__}, which records "
            "do not hold. The file is corrupt."
        )


def flatten(tree: Any, path: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Flatten nested dicts and lists into `{"a.b.0.c": leaf}` (a state_dict's naming)."""
    out = {} if out is None else out
    if isinstance(tree, dict) and (tree or not path):
        for key, value in tree.items():
            flatten(value, join(path, key), out)
    elif isinstance(tree, list) and tree:
        for index, value in enumerate(tree):
            flatten(value, join(path, str(index)), out)
    else:
        if path in out:
            raise RecordError(
                f"Two record entries flatten to the same key `{path}` (a key containing '.' "
                "collides with a nested one). Rename one."
            )
        out[path] = tree
    return out

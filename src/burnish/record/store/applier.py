"""Loading snapshots into a module's tensors (Burn's `Applier`), in place.

For each tensor of the module, in module order: look its path up in the store (else, with an
adapter, the adapter's alternative name, e.g. `gamma` for a norm's `weight`); adapt it in the
module tensor's context; skip it if the filter excludes it; check its shape and kind (float,
int, bool); copy it into the module tensor (cast to that tensor's dtype and device). The result
lists what was applied, skipped, missing, unused, and the errors.
"""

from __future__ import annotations

import torch
from torch import nn

from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.apply_result import ApplyError, ApplyResult
from burnish.record.store.filter import PathFilter
from burnish.record.store.param_id import set_param_id
from burnish.record.store.snapshot import TensorSnapshot
from burnish.record.store.traversal import ModuleTensor, module_tensors

__all__ = ["apply"]


def apply(
    module: nn.Module,
    snapshots: dict[str, TensorSnapshot],
    filter: PathFilter | None = None,
    adapter: ModuleAdapter | None = None,
) -> ApplyResult:
    """Copy the matching `snapshots` (keyed by full path) into `module`; see the module doc."""
    result = ApplyResult()
    used: set[str] = set()
    for entry in module_tensors(module):
        path = ".".join(entry.path_stack)
        found = _find(entry, snapshots, adapter)
        if found is None:
            result.missing.append((path, ".".join(entry.container_stack)))
            continue
        key, snapshot = found
        used.add(key)
        snapshot = snapshot.with_path(entry.path_stack, entry.container_stack)
        if adapter is not None:
            snapshot = adapter.adapt(snapshot)
        if filter is not None and not filter.matches(path, snapshot.container_path):
            result.skipped.append(path)
            continue
        error = _copy(entry.tensor, snapshot, path)
        if error is None:
            result.applied.append(path)
        else:
            result.errors.append(error)
        snapshot.release()
    result.unused = sorted(set(snapshots) - used)
    result.skipped.sort()
    return result


def _find(
    entry: ModuleTensor, snapshots: dict[str, TensorSnapshot], adapter: ModuleAdapter | None
) -> tuple[str, TensorSnapshot] | None:
    path = ".".join(entry.path_stack)
    if path in snapshots:
        return path, snapshots[path]
    module_type = next(
        (c for c in reversed(entry.container_stack) if c.startswith("Struct:")), None
    )
    if adapter is None or module_type is None:
        return None
    alternative = adapter.get_alternative_param_name(entry.path_stack[-1], module_type)
    if alternative is None:
        return None
    key = ".".join((*entry.path_stack[:-1], alternative))
    return (key, snapshots[key]) if key in snapshots else None


def _copy(target: torch.Tensor, snapshot: TensorSnapshot, path: str) -> ApplyError | None:
    if tuple(snapshot.shape) != tuple(target.shape):
        return ApplyError("ShapeMismatch", path, f"Shape mismatch for {path!r}: expected "
                          f"{list(target.shape)}, found {list(snapshot.shape)}")  # fmt: skip
    if _kind(snapshot.dtype) != _kind(target.dtype):
        return ApplyError("DTypeMismatch", path, f"DType mismatch for {path!r}: expected "
                          f"{target.dtype} ({_kind(target.dtype)}), found {snapshot.dtype} "
                          f"({_kind(snapshot.dtype)})")  # fmt: skip
    try:
        data = snapshot.to_data()
        with torch.no_grad():
            target.copy_(data)
    except Exception as error:  # a read or conversion failure names the tensor
        return ApplyError("LoadError", path, f"Load error for {path!r}: {error}")
    set_param_id(target, snapshot.param_id)
    return None


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    return "float" if dtype.is_floating_point or dtype.is_complex else "int"

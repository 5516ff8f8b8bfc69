"""Burn's dtype adapters: `HalfPrecisionAdapter` (F32 <-> F16 by module type) and
`FloatCastAdapter` (every float tensor to one dtype).

Both are lazy (the cast runs when the tensor is written or applied) and keep path, containers
and `param_id`. Use them as `with_to_adapter` to store at another precision, or
`with_from_adapter` to load one.
"""

from __future__ import annotations

import dataclasses

import torch

from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.burnpack import DTYPES
from burnish.record.store.snapshot import TensorSnapshot
from burnish.value_builder import ValueBuilder

__all__ = ["FloatCastAdapter", "HalfPrecisionAdapter"]

#: The module types `HalfPrecisionAdapter` converts by default (Burn's list; BatchNorm is not
#: in it: its running statistics lose too much at F16).
DEFAULT_MODULES = frozenset(
    f"Struct:{name}"
    for name in ("Linear", "Embedding", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d",
                 "ConvTranspose2d", "ConvTranspose3d", "DeformConv2d", "LayerNorm", "GroupNorm",
                 "InstanceNorm", "RmsNorm", "PRelu")
)  # fmt: skip


def _cast(snapshot: TensorSnapshot, dtype: torch.dtype) -> TensorSnapshot:
    data_fn = snapshot.data_fn
    return dataclasses.replace(snapshot, dtype=dtype, data_fn=lambda: data_fn().to(dtype))


def _key(module_type: str) -> str:
    return module_type if ":" in module_type else f"Struct:{module_type}"


class HalfPrecisionAdapter(ValueBuilder, ModuleAdapter):
    """F32 tensors of the chosen module types to F16, and F16 to F32; others unchanged.

    `with_module`/`without_module` return a new adapter (this one stays as it was).

    Example:
        >>> adapter = HalfPrecisionAdapter().without_module("LayerNorm")
    """

    def __init__(self) -> None:
        self.modules = set(DEFAULT_MODULES)

    def with_module(self, module_type: str) -> HalfPrecisionAdapter:
        """Also convert `module_type` (`"BatchNorm"` or `"Struct:BatchNorm"`)."""
        return self._replace(modules={*self.modules, _key(module_type)})

    def without_module(self, module_type: str) -> HalfPrecisionAdapter:
        """Stop converting `module_type`.

        Raises:
            ValueError: if it is not in the set (a typo would otherwise change nothing).
        """
        key = _key(module_type)
        if key not in self.modules:
            raise ValueError(
                f"without_module received {module_type!r}, which is not in the module set "
                f"({', '.join(sorted(self.modules))}). Check the name."
            )
        return self._replace(modules=self.modules - {key})

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        target = {torch.float32: torch.float16, torch.float16: torch.float32}.get(snapshot.dtype)
        if target is None or snapshot.module_type() not in self.modules:
            return snapshot
        return _cast(snapshot, target)


class FloatCastAdapter(ModuleAdapter):
    """Every float tensor to one float dtype; int and bool tensors unchanged."""

    def __init__(self, target: torch.dtype) -> None:
        self.target = target

    @classmethod
    def to(cls, target: torch.dtype | str) -> FloatCastAdapter:
        """An adapter casting to `target` (a torch float dtype or Burn's name: `"F16"`, ...).

        Raises:
            ValueError: for a dtype that is not a float.
        """
        dtype = DTYPES.get(target) if isinstance(target, str) else target
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(
                f"FloatCastAdapter target must be a float dtype (torch.float16, 'BF16', ...); "
                f"received {target!r}."
            )
        return cls(dtype)

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        if not snapshot.dtype.is_floating_point or snapshot.dtype == self.target:
            return snapshot
        return _cast(snapshot, self.target)

    def __repr__(self) -> str:
        return f"FloatCastAdapter.to({self.target})"

"""A tensor as a store sees it: where it lives in the module, and its data on demand.

Burn's `TensorSnapshot`: the path (`["encoder", "0", "weight"]`), the container types along it
(`["Struct:Model", "Vec", "Struct:Linear"]`), shape, dtype, the parameter id, and a function
that produces the data, so adapters stay lazy and a file is read only when a tensor is applied.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import torch

__all__ = ["TensorSnapshot"]


@dataclasses.dataclass(frozen=True)
class TensorSnapshot:
    """One tensor: its path, containers, shape and dtype now; its data when `to_data()` runs.

    Attributes:
        path_stack: the path's parts, e.g. `("encoder", "0", "weight")`.
        container_stack: the container type of each part (`"Struct:Linear"`, `"Vec"`, ...);
            empty for tensors read from a file.
        shape: the tensor's shape.
        dtype: the tensor's torch dtype.
        param_id: Burn's `ParamId` (u64), if known.
        data_fn: produces the tensor.
        release: called once the tensor was applied (drops its mapped pages).
    """

    path_stack: tuple[str, ...]
    container_stack: tuple[str, ...]
    shape: tuple[int, ...]
    dtype: torch.dtype
    param_id: int | None
    data_fn: Callable[[], torch.Tensor]
    release: Callable[[], None] = lambda: None

    @property
    def full_path(self) -> str:
        """The dotted path, e.g. `"encoder.0.weight"`."""
        return ".".join(self.path_stack)

    @property
    def container_path(self) -> str:
        """The dotted container types, e.g. `"Struct:Model.Vec.Struct:Linear"`."""
        return ".".join(self.container_stack)

    def module_type(self) -> str | None:
        """The innermost user-defined container (`"Struct:..."`), skipping `Vec`/`Map`."""
        for container in reversed(self.container_stack):
            if container.startswith(("Struct:", "Enum:")):
                return container
        return None

    def to_data(self) -> torch.Tensor:
        """The tensor (for a file, a view of its mapping where possible)."""
        return self.data_fn()

    def with_path(
        self, path_stack: tuple[str, ...], container_stack: tuple[str, ...]
    ) -> TensorSnapshot:
        """The same data under another path and containers."""
        return dataclasses.replace(self, path_stack=path_stack, container_stack=container_stack)

    @classmethod
    def from_tensor(cls, name: str, tensor: torch.Tensor, param_id: int | None = None,
                    release: Callable[[], None] = lambda: None) -> TensorSnapshot:  # fmt: skip
        """A snapshot of a tensor read from a file (no container types)."""
        return cls(tuple(name.split(".")), (), tuple(tensor.shape), tensor.dtype, param_id,
                   lambda: tensor, release)  # fmt: skip

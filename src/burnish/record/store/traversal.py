"""Walking a PyTorch module as Burn's `ModuleVisitor`: each saved tensor with its path and the
container types along it.

The tensors are the module's `state_dict` ones (parameters and persistent buffers, in the
same order). Container types use Burn's names, so adapters and filters written for Burn match:
`nn.Linear` is `"Struct:Linear"`, any `_BatchNorm` `"Struct:BatchNorm"`, `nn.Conv2d`
`"Struct:Conv2d"`, `nn.RMSNorm` `"Struct:RmsNorm"`, `nn.PReLU` `"Struct:PRelu"`, other modules
`"Struct:<class name>"`, and `nn.Sequential`/`nn.ModuleList` `"Vec"` (Burn's `Vec<M>`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import torch
from torch import nn

__all__ = ["ModuleTensor", "container_type", "module_tensors"]

_BURN_NAMES: tuple[tuple[type[nn.Module], str], ...] = (
    (nn.Linear, "Linear"),
    (nn.modules.batchnorm._BatchNorm, "BatchNorm"),
    (nn.modules.instancenorm._InstanceNorm, "InstanceNorm"),
    (nn.LayerNorm, "LayerNorm"),
    (nn.GroupNorm, "GroupNorm"),
    (nn.Embedding, "Embedding"),
    (nn.PReLU, "PRelu"),
)
if hasattr(nn, "RMSNorm"):  # torch >= 2.4
    _BURN_NAMES += ((nn.RMSNorm, "RmsNorm"),)


@dataclasses.dataclass(frozen=True)
class ModuleTensor:
    """A tensor of a module, where it is and what holds it."""

    path_stack: tuple[str, ...]
    container_stack: tuple[str, ...]
    tensor: torch.Tensor


def container_type(module: nn.Module) -> str:
    """Burn's container type name for `module` (see the module docstring)."""
    if isinstance(module, (nn.Sequential, nn.ModuleList)):
        return "Vec"
    for kind, name in _BURN_NAMES:
        if isinstance(module, kind):
            return f"Struct:{name}"
    return f"Struct:{type(module).__name__}"


def module_tensors(module: nn.Module) -> Iterator[ModuleTensor]:
    """Every tensor of `module`'s state_dict, in its order, with paths and containers."""
    yield from _walk(module, (), (container_type(module),))


def _walk(
    module: nn.Module, path: tuple[str, ...], containers: tuple[str, ...]
) -> Iterator[ModuleTensor]:
    for name, param in module._parameters.items():
        if param is not None:
            yield ModuleTensor((*path, name), containers, param)
    for name, buffer in module._buffers.items():
        if buffer is not None and name not in module._non_persistent_buffers_set:
            yield ModuleTensor((*path, name), containers, buffer)
    for name, child in module._modules.items():
        if child is not None:
            yield from _walk(child, (*path, name), (*containers, container_type(child)))

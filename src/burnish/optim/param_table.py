"""A module's parameters, listed once and reused every step until the module changes.

`nn.Module.named_parameters()` walks the module tree in Python, one generator per submodule;
a training step needs the parameter list three times (backward, optimizer step, accumulation).
`param_table(module)` walks the tree once and caches the result for that module object. Each
later call checks that the tree still has the same shape before reusing it: the keys and the
object ids of every submodule's `_parameters` and `_modules` dicts, read by C-level `map`
calls, with no Python frame per submodule or parameter.

Every change that gives the module other parameters or other names is seen: a parameter
added, replaced or deleted (`register_parameter`, `setattr`, `del`,
`load_state_dict(assign=True)`), a submodule added, replaced, removed or moved
(`ModuleList.insert`, `Sequential.pop`, ...). Changes that keep the same `Parameter`
objects need nothing: `model.to(device)` and `load_state_dict` replace or copy into their
data in place. A copy of the module (`fork`, `copy.deepcopy`, `valid`) is another object,
with its own table.
"""

from __future__ import annotations

import dataclasses
import weakref
from itertools import chain
from operator import attrgetter, methodcaller

from torch import Tensor, nn

__all__ = ["ParamTable", "param_table", "unwrap"]

_PARAMETERS = attrgetter("_parameters")
_MODULES = attrgetter("_modules")
_KEYS = methodcaller("keys")
_VALUES = methodcaller("values")


def unwrap(module: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel / DataParallel wrapper (else `module`)."""
    parallel = (nn.parallel.DistributedDataParallel, nn.DataParallel)
    while isinstance(module, parallel):
        module = module.module
    return module


@dataclasses.dataclass(frozen=True, eq=False)
class ParamTable:
    """The parameters of one module, in `named_parameters()` order (tied ones once).

    Attributes:
        names: qualified names relative to the module (`"linear1.bias"`).
        params: the parameter tensors.
        keys: `id()` of each parameter, the key gradients are stored under.
        by_name: name -> parameter.
        name_of: `id(parameter)` -> name.
    """

    names: tuple[str, ...]
    params: tuple[Tensor, ...]
    keys: tuple[int, ...]
    by_name: dict[str, Tensor]
    name_of: dict[int, str]
    # Every submodule but the root (held so that their ids cannot be reused while cached).
    submodules: tuple[nn.Module, ...]
    shape: tuple[list[str], list[int]]


_TABLES: weakref.WeakKeyDictionary[nn.Module, ParamTable] = weakref.WeakKeyDictionary()


def param_table(module: nn.Module) -> ParamTable:
    """The `ParamTable` of `module` (a DDP wrapper is unwrapped), cached per module object.

    Raises:
        TypeError: if `module` is not an `nn.Module`.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"Expected a torch.nn.Module. Received: {type(module).__name__}.")
    module = unwrap(module)
    table = _TABLES.get(module)
    if table is None or table.shape != _shape(module, table.submodules):
        table = _TABLES[module] = _build(module)
    return table


def _build(module: nn.Module) -> ParamTable:
    named = list(module.named_parameters())
    names = tuple(name for name, _ in named)
    params = tuple(param for _, param in named)
    keys = tuple(map(id, params))
    submodules = tuple(m for _, m in module.named_modules() if m is not module)
    return ParamTable(
        names=names,
        params=params,
        keys=keys,
        by_name=dict(named),
        name_of=dict(zip(keys, names)),
        submodules=submodules,
        shape=_shape(module, submodules),
    )


def _shape(module: nn.Module, submodules: tuple[nn.Module, ...]) -> tuple[list[str], list[int]]:
    """Keys and value ids of every `_parameters` and `_modules` dict of the tree."""
    modules = (module, *submodules)
    dicts = [*map(_PARAMETERS, modules), *map(_MODULES, modules)]
    keys = list(chain.from_iterable(map(_KEYS, dicts)))
    values = list(map(id, chain.from_iterable(map(_VALUES, dicts))))
    return keys, values

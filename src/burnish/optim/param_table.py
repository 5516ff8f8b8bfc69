"""A module's parameters, listed once and reused every step until the module changes.

`nn.Module.named_parameters()` walks the module tree in Python, one generator per submodule;
a training step needs the parameter list two or three times (backward, optimizer step,
accumulation). `param_table(module)` walks the tree once and caches the result for that
module object, reusing it while the tree keeps its parameters and submodules:

* every registration anywhere (`setattr` of a parameter or module, `register_parameter`,
  `add_module`, `load_state_dict(assign=True)`, ...) bumps a counter, through torch's
  global registration hooks, which invalidates every table;
* removals (`del module.x`, `Sequential.pop`, ...) and container inserts are seen by
  comparing the size of every submodule's `_parameters` dict and the children of every
  module that had children (a module without children gains one only by a registration),
  with C-level `map` calls (no Python frame per submodule or parameter).

Changes that keep the same `Parameter` objects need nothing: `model.to(device)` and
`load_state_dict` replace or copy into their data in place (under
`torch.__future__.set_overwrite_module_params_on_conversion(True)`, `to()` makes new
parameters, so tables are not reused then). A copy of the module (`fork`,
`copy.deepcopy`, `valid`) is another object, with its own table. Writing into a module's
private `_parameters` dict directly, replacing a parameter without a registration, or
replacing that dict, is not seen: call `invalidate_tables()` after doing so.
"""

from __future__ import annotations

import dataclasses
import weakref
from itertools import chain
from operator import attrgetter, methodcaller
from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["ParamTable", "current", "invalidate_tables", "param_table", "trace_table", "unwrap"]

_PARAMETERS = attrgetter("_parameters")
_MODULES = attrgetter("_modules")
_VALUES = methodcaller("values")


class _Registrations:
    """How many parameters and submodules were registered since the hooks were installed."""

    count = 0
    installed = False

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            cls.installed = True
            nn.modules.module.register_module_parameter_registration_hook(cls.seen)
            nn.modules.module.register_module_module_registration_hook(cls.seen)

    @classmethod
    def seen(cls, module: nn.Module, name: str, value: Any) -> None:
        cls.count += 1


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
        strides: each parameter's strides when the table was made.
        by_name: name -> parameter.
        name_of: `id(parameter)` -> name.
    """

    names: tuple[str, ...]
    params: tuple[Tensor, ...]
    keys: tuple[int, ...]
    strides: list[tuple[int, ...]]
    by_name: dict[str, Tensor]
    name_of: dict[int, str]
    # What `_unchanged` compares: the registration count, the `_parameters` dicts of the
    # tree, the submodules that have children (held, so that their ids are not reused while
    # cached; the root is the cache's weak key, never held), and the layout.
    registrations: int
    parameter_dicts: tuple[dict[str, Any], ...]
    parents: tuple[nn.Module, ...]
    layout: tuple[list[int], list[int]]


_TABLES: weakref.WeakKeyDictionary[nn.Module, ParamTable] = weakref.WeakKeyDictionary()
# The module whose table a compiled train step reads while traced (`trace_table`).
_traced: tuple[nn.Module, ParamTable] | None = None


def param_table(module: nn.Module) -> ParamTable:
    """The `ParamTable` of `module` (a DDP wrapper is unwrapped), cached per module object.

    Raises:
        TypeError: if `module` is not an `nn.Module`.
    """
    if not isinstance(module, nn.Module):
        raise TypeError(f"Expected a torch.nn.Module. Received: {type(module).__name__}.")
    module = unwrap(module)
    if torch.compiler.is_compiling() and _traced is not None and _traced[0] is module:
        return _traced[1]  # a compiled train step; dynamo guards on this pair, not on _TABLES
    table = _TABLES.get(module)
    if table is None or not _unchanged(module, table):
        table = _TABLES[module] = _build(module)
    return table


def trace_table(module: nn.Module | None) -> ParamTable | None:
    """Pin `module`'s table for `torch.compile` to read (None: unpin); returns the table.

    While traced, `param_table(module)` returns the pinned table unchecked: the compiled
    graph holds the parameters it traced, and dynamo guards on the module's identity.
    """
    global _traced
    _traced = None if module is None else (unwrap(module), param_table(module))
    return None if _traced is None else _traced[1]


def current(module: nn.Module, table: ParamTable) -> bool:
    """Whether `table` is the cached table of `module` and no registration happened since
    it was last checked: what `optim.step` trusts right after `from_grads` checked it."""
    if torch.compiler.is_compiling() and _traced is not None:
        return _traced[1] is table
    return table.registrations == _Registrations.count and _TABLES.get(unwrap(module)) is table


def invalidate_tables() -> None:
    """Forget every cached table: for code that replaces parameters without registering
    them (FSDP's `fully_shard` writes its sharded parameters into `_parameters`)."""
    _Registrations.count += 1


def _unchanged(module: nn.Module, table: ParamTable) -> bool:
    return (
        table.registrations == _Registrations.count
        and not torch.__future__.get_overwrite_module_params_on_conversion()
        and table.layout == _layout(module, table.parameter_dicts, table.parents)
    )


def _build(module: nn.Module) -> ParamTable:
    _Registrations.install()
    registrations = _Registrations.count
    named = list(module.named_parameters())
    names = tuple(name for name, _ in named)
    params = tuple(param for _, param in named)
    keys = tuple(map(id, params))
    modules = [m for _, m in module.named_modules()]
    parameter_dicts = tuple(map(_PARAMETERS, modules))
    parents = tuple(m for m in modules[1:] if m._modules)
    return ParamTable(
        names=names,
        params=params,
        keys=keys,
        strides=list(map(Tensor.stride, params)),
        by_name=dict(named),
        name_of=dict(zip(keys, names)),
        registrations=registrations,
        parameter_dicts=parameter_dicts,
        parents=parents,
        layout=_layout(module, parameter_dicts, parents),
    )


def _layout(
    module: nn.Module, parameter_dicts: tuple[dict[str, Any], ...], parents: tuple[nn.Module, ...]
) -> tuple[list[int], list[int]]:
    """The size of every `_parameters` dict, and the ids of the children of `module` and of
    `parents`."""
    sizes = list(map(len, parameter_dicts))
    children = map(id, chain.from_iterable(map(_VALUES, map(_MODULES, (module, *parents)))))
    return sizes, list(children)

"""Gradients mapped to parameters (Burn: `GradientsParams`).

A parameter id is its qualified name relative to the module the gradients were taken from
(`"linear1.bias"`; `module.` of a DistributedDataParallel wrapper is dropped). Wherever an id
is taken, the parameter tensor itself is accepted too; tensors are the unambiguous key, so
gradients taken from a sub-module still apply when the whole model is stepped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import compress, repeat
from operator import is_not, itemgetter
from typing import cast

import torch
from torch import Tensor, nn

from burnish.optim.grads import Gradients
from burnish.optim.param_table import ParamTable, current, param_table, unwrap

__all__ = ["GradientsParams", "ParamId", "unwrap"]

ParamId = str | Tensor
_is_not_none = partial(is_not, None)
_GRAD = itemgetter(2)


class GradientsParams:
    """Per-parameter gradients: what `optim.step(lr, model, grads)` consumes (Burn's type).

    Build it from `bn.backward(loss)` with `from_grads` (every parameter of a module),
    `from_module` (one submodule's, leaving the rest in the `Gradients`) or `from_params`
    (chosen parameters). A parameter is named by its tensor or by its qualified name.
    `optim.step` removes the gradients it applies, so one `GradientsParams` can feed several
    optimizers, each taking its own parameters.

    Example:
        Two optimizers with their own learning rates on one model:

        >>> import torch
        >>> import burnish as bn
        >>> from burnish.optim import AdamConfig, GradientsParams, SgdConfig
        >>> model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
        >>> loss = model(torch.ones(2, 3)).sum()
        >>> grads = bn.backward(loss)
        >>> head = GradientsParams.from_params(grads, model, ["1.weight", "1.bias"])
        >>> body = GradientsParams.from_grads(grads, model)  # what is left: model[0]'s
        >>> head.ids(), len(body)
        (['1.weight', '1.bias'], 2)
        >>> body.get("0.bias") is body.get(model[0].bias) is body["0.bias"]
        True
        >>> list(body), "0.weight" in body, model[0].bias in body
        (['0.weight', '0.bias'], True, True)
        >>> model = SgdConfig().init().step(1e-2, model, body)
        >>> model = AdamConfig().init().step(1e-3, model, head)
        >>> body.is_empty(), head.is_empty()  # consumed by the steps
        (True, True)
    """

    __slots__ = ("_dense", "_dict", "_names")

    def __init__(self) -> None:
        # id(param) -> (name, param, grad), in parameter order; read through `_entries`.
        self._dict: dict[int, tuple[str, Tensor, Tensor]] = {}
        # As `from_grads` made them: a module's table and the gradient of each of its
        # parameters (None: no gradient). Turned into `_dict` on the first other use.
        self._dense: tuple[ParamTable, list[Tensor | None]] | None = None
        # name -> id(param) for string lookups; built on the first one (None: not built).
        self._names: dict[str, int] | None = None

    @property
    def _entries(self) -> dict[int, tuple[str, Tensor, Tensor]]:
        if self._dense is not None:
            table, values = self._dense
            self._dense = None
            entries: Iterable[tuple[int, tuple[str, Tensor, Tensor | None]]]
            entries = zip(table.keys, zip(table.names, table.params, values))
            if not all(map(_is_not_none, values)):
                entries = compress(entries, map(_is_not_none, values))
            self._dict = dict(cast("Iterable[tuple[int, tuple[str, Tensor, Tensor]]]", entries))
        return self._dict

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_grads(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Gradients of every parameter of `module`; consumes `grads` (Burn semantics).

        This is the fast path: if the backward pass has not run yet it is run for exactly
        these parameters, without walking the autograd graph.
        """
        _check_grads(grads)
        table = param_table(module)
        result = cls()
        result._dense = (table, grads._take_all(table.params, table.strides))
        return result

    @classmethod
    def from_module(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Gradients of `module`'s parameters, removed from `grads` (the rest stay there)."""
        _check_grads(grads)
        grads._materialize(None)
        table = param_table(module)
        return cls._collect(grads, zip(table.names, table.params))

    @classmethod
    def from_params(
        cls, grads: Gradients, module: nn.Module, params: Sequence[ParamId]
    ) -> GradientsParams:
        """Gradients of the given parameters of `module`, removed from `grads`.

        Args:
            grads: from `bn.backward`.
            module: the module holding the parameters.
            params: parameter tensors, or their names relative to `module`.

        Raises:
            KeyError: if a parameter is not one of `module`'s.
        """
        _check_grads(grads)
        grads._materialize(None)
        table = param_table(module)
        wanted = []
        for param in params:
            name = param if isinstance(param, str) else table.name_of.get(id(param))
            if name is None or name not in table.by_name:
                raise KeyError(
                    f"Parameter {_describe(param)} is not a parameter of "
                    f"{type(module).__name__}. Expected one of: {', '.join(table.names)}."
                )
            wanted.append((name, table.by_name[name]))
        return cls._collect(grads, wanted)

    @classmethod
    def _collect(cls, grads: Gradients, named: Iterable[tuple[str, Tensor]]) -> GradientsParams:
        result = cls()
        for name, param in named:
            value = grads._grads.pop(id(param), None)
            if value is not None:
                grads._tensors.pop(id(param), None)
                result.register(param, value, name=name)
        return result

    # -- access ------------------------------------------------------------------------------

    def register(self, param: Tensor, grad: Tensor, name: str | None = None) -> None:
        """Set (or replace) the gradient of `param`, known as `name` (default: its old name)."""
        key = id(param)
        old = self._entries.get(key)
        name = name if name is not None else (old[0] if old else f"<tensor {key:x}>")
        self._entries[key] = (name, param, grad)
        if self._names is not None:
            if old is not None:
                self._forget(old[0], key)
            self._names[name] = key

    def get(self, param: ParamId) -> Tensor | None:
        """The gradient of `param` (a tensor or its id), or None. Does not remove it."""
        key = self._key(param)
        entry = None if key is None else self._entries.get(key)
        return None if entry is None else entry[2]

    def __getitem__(self, param: ParamId) -> Tensor:
        """`grads[param]`: the gradient of `param` (a tensor or its id), as `get` without None.

        Raises:
            KeyError: if `param` has no gradient here, naming the ids that have one.
        """
        value = self.get(param)
        if value is None:
            ids = self.ids()
            shown = ", ".join(map(repr, ids[:20])) + (", ..." if len(ids) > 20 else "")
            raise KeyError(
                f"No gradient for parameter {_describe(param)}. This GradientsParams holds "
                f"{len(ids)}: {shown or 'none'}. Use `grads.get(param)` for None instead."
            )
        return value

    def __iter__(self) -> Iterator[str]:
        """The ids (qualified names) of the parameters that have a gradient, as `ids()`."""
        return iter(self.ids())

    def keys(self) -> list[str]:
        """The ids of the parameters that have a gradient (`dict(grads)` works)."""
        return self.ids()

    def values(self) -> Iterator[Tensor]:
        """The gradients, in the order of `ids()`."""
        return (value for _, _, value in self._entries.values())

    def remove(self, param: ParamId) -> Tensor | None:
        """Remove and return the gradient of `param` (a tensor or its id), or None."""
        key = self._key(param)
        if key is None:
            return None
        entry = self._entries.pop(key, None)
        if entry is None:
            return None
        self._forget(entry[0], key)
        return entry[2]

    def ids(self) -> list[str]:
        """The ids (qualified names) of the parameters that have a gradient."""
        return [name for name, _, _ in self._entries.values()]

    def items(self) -> Iterator[tuple[str, Tensor]]:
        """`(id, gradient)` pairs."""
        return ((name, value) for name, _, value in self._entries.values())

    def to_device(self, device: torch.device | str) -> GradientsParams:
        """Move every gradient to `device` (in place); returns self."""
        for key, (name, param, value) in self._entries.items():
            self._entries[key] = (name, param, value.to(device, non_blocking=True))
        return self

    def is_empty(self) -> bool:
        """Whether no gradient is registered."""
        return not self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, param: ParamId) -> bool:
        return self._key(param) in self._entries

    def __repr__(self) -> str:
        return f"GradientsParams({self.ids()})"

    def _take_for(self, module: nn.Module) -> tuple[list[str], list[Tensor], list[Tensor]]:
        """Pop the gradients of `module`'s parameters: names (relative to it), params, grads.

        Gradients that `from_grads` just took from `module` are used as they are: its table
        was checked then, and is trusted unless a registration happened since.
        """
        dense = self._dense
        if dense is not None and current(module, dense[0]):
            table, values = dense
            self._dense = None
            present = list(map(_is_not_none, values))
            grads = cast(
                "list[Tensor]", values if all(present) else list(compress(values, present))
            )
        else:
            table = param_table(module)
            taken = list(map(self._entries.pop, table.keys, repeat(None)))
            self._names = None
            present = list(map(_is_not_none, taken))
            entries = cast("Iterable[tuple[str, Tensor, Tensor]]", compress(taken, present))
            grads = list(map(_GRAD, entries))
        if len(grads) == len(present):
            return list(table.names), list(table.params), grads
        names = list(compress(table.names, present))
        return names, list(compress(table.params, present)), grads

    def _extend(self, names: list[str], params: list[Tensor], grads: list[Tensor]) -> None:
        """Register the gradients of parameters that have none yet, in order."""
        if not self._entries:
            self._dict = dict(zip(map(id, params), zip(names, params, grads)))
            self._names = None
            return
        self._entries.update(zip(map(id, params), zip(names, params, grads)))
        self._names = None

    def _forget(self, name: str, key: int) -> None:
        if self._names is not None and self._names.get(name) == key:
            del self._names[name]

    def _key(self, param: ParamId) -> int | None:
        if isinstance(param, Tensor):
            return id(param)
        if isinstance(param, str):
            if self._names is None:
                self._names = {name: key for key, (name, _, _) in self._entries.items()}
            return self._names.get(param)
        raise TypeError(
            f"A parameter id is a qualified name (str) or the parameter tensor. Received: "
            f"{type(param).__name__}."
        )


def _check_grads(grads: Gradients) -> None:
    if not isinstance(grads, Gradients):
        raise TypeError(
            f"`grads` must be the Gradients returned by bn.backward(loss). Received: "
            f"{type(grads).__name__}."
        )


def _describe(param: ParamId) -> str:
    if isinstance(param, str):
        return repr(param)
    return f"tensor(shape={tuple(param.shape)})" if isinstance(param, Tensor) else repr(param)

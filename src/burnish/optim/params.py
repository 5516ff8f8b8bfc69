"""Gradients mapped to parameters (Burn: `GradientsParams`).

A parameter id is its qualified name relative to the module the gradients were taken from
(`"linear1.bias"`; `module.` of a DistributedDataParallel wrapper is dropped). Wherever an id
is taken, the parameter tensor itself is accepted too; tensors are the unambiguous key, so
gradients taken from a sub-module still apply when the whole model is stepped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor, nn

from burnish.optim.grads import Gradients

__all__ = ["GradientsParams", "ParamId", "named_parameters", "unwrap"]

ParamId = str | Tensor


def unwrap(module: nn.Module) -> nn.Module:
    """The module inside a DistributedDataParallel / DataParallel wrapper (else `module`)."""
    parallel = (nn.parallel.DistributedDataParallel, nn.DataParallel)
    while isinstance(module, parallel):
        module = module.module
    return module


def named_parameters(module: nn.Module) -> Iterator[tuple[str, Tensor]]:
    """`(id, parameter)` pairs of `module`, ids without any DDP `module.` prefix."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"Expected a torch.nn.Module. Received: {type(module).__name__}.")
    return unwrap(module).named_parameters()


class GradientsParams:
    """Per-parameter gradients: what `optim.step(lr, model, grads)` consumes.

    Example:
        >>> grads = GradientsParams.from_grads(bn.backward(loss), model)
        >>> len(grads), grads.get("linear1.bias") is grads.get(model.linear1.bias)
    """

    __slots__ = ("_entries", "_names")

    def __init__(self) -> None:
        # id(param) -> (name, param, grad); names -> id(param) for string lookups.
        self._entries: dict[int, tuple[str, Tensor, Tensor]] = {}
        self._names: dict[str, int] = {}

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def from_grads(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Gradients of every parameter of `module`; consumes `grads` (Burn semantics).

        This is the fast path: if the backward pass has not run yet it is run for exactly
        these parameters, without walking the autograd graph.
        """
        _check_grads(grads)
        named = list(named_parameters(module))
        grads._materialize([p for _, p in named])
        result = cls._collect(grads, named)
        grads._grads.clear()
        grads._tensors.clear()
        return result

    @classmethod
    def from_module(cls, grads: Gradients, module: nn.Module) -> GradientsParams:
        """Gradients of `module`'s parameters, removed from `grads` (the rest stay there)."""
        _check_grads(grads)
        grads._materialize(None)
        return cls._collect(grads, list(named_parameters(module)))

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
        named = list(named_parameters(module))
        by_name = dict(named)
        by_id = {id(p): n for n, p in named}
        wanted = []
        for param in params:
            name = param if isinstance(param, str) else by_id.get(id(param))
            if name is None or name not in by_name:
                raise KeyError(
                    f"Parameter {_describe(param)} is not a parameter of "
                    f"{type(module).__name__}. Expected one of: {', '.join(by_name)}."
                )
            wanted.append((name, by_name[name]))
        return cls._collect(grads, wanted)

    @classmethod
    def _collect(cls, grads: Gradients, named: list[tuple[str, Tensor]]) -> GradientsParams:
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
        self._names[name] = key

    def get(self, param: ParamId) -> Tensor | None:
        """The gradient of `param` (a tensor or its id), or None. Does not remove it."""
        entry = self._entries.get(self._key(param))
        return None if entry is None else entry[2]

    def remove(self, param: ParamId) -> Tensor | None:
        """Remove and return the gradient of `param` (a tensor or its id), or None."""
        entry = self._entries.pop(self._key(param), None)
        if entry is None:
            return None
        self._names.pop(entry[0], None)
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

    def _take(self, param: Tensor) -> Tensor | None:
        """Pop by tensor identity (the optimizer's hot path)."""
        entry = self._entries.pop(id(param), None)
        if entry is None:
            return None
        self._names.pop(entry[0], None)
        return entry[2]

    def _key(self, param: ParamId) -> int | None:
        if isinstance(param, Tensor):
            return id(param)
        if isinstance(param, str):
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

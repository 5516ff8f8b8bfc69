"""Gradient (activation) checkpointing of a model's blocks.

A checkpointed block keeps only its inputs during the forward pass; its activations are
recomputed when the backward pass reaches it (`torch.utils.checkpoint`, non-reentrant). Peak
memory then grows with the number of blocks' *inputs* instead of every activation inside
them, for one extra forward pass of each block. The gradients are the same: `bn.backward`,
`GradientsParams`, gradient accumulation, `torch.autocast` and DDP's hooks see the same graph.

Burn's `SupervisedTraining::gradient_checkpointing()` asks its autodiff backend to recompute
memory-bound operations; PyTorch checkpoints regions of the model instead, so burnish
checkpoints the model's repeated blocks, as Hugging Face's `gradient_checkpointing_enable()`
does for its layers. Blocks are found as:

- `blocks=None` (the default): the modules held in each `nn.ModuleList` of the model (the
  usual home of a transformer's layers), the outermost lists only;
- `blocks=Block` or `(BlockA, BlockB)`: every module of these types (outermost ones);
- `blocks=predicate`: every module for which `predicate(module)` is True (outermost ones).

Parameter names, `state_dict` and records are unchanged: each block's class is swapped for a
subclass of the same name whose `forward` runs the original under the checkpoint. Without
gradients (`torch.no_grad()`, `bn.valid(model)`) a block runs as usual.

Example:
    >>> import torch
    >>> import burnish as bn
    >>> class Net(bn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.layers = torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3))
    ...     def forward(self, x):
    ...         for layer in self.layers:
    ...             x = torch.relu(layer(x))
    ...         return x
    >>> bn.checkpoint_blocks(Net())
    ['layers.0', 'layers.1', 'layers.2']
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

__all__ = ["BlockSelector", "checkpoint_blocks", "checkpointed_blocks", "gradient_checkpointing"]

#: What `checkpoint_blocks` wraps: None (each `nn.ModuleList`'s modules), a module type or
#: tuple of types, or a predicate over modules.
BlockSelector = type | tuple[type, ...] | Callable[[nn.Module], bool] | None


def checkpoint_blocks(
    model: nn.Module, blocks: BlockSelector = None, *, enabled: bool = True
) -> list[str]:
    """Checkpoint the blocks of `model` (or, `enabled=False`, stop checkpointing them).

    Args:
        model: any `nn.Module`.
        blocks: which submodules are checkpointed (see the module's docstring): None for the
            modules of each `nn.ModuleList`, a type or tuple of types, or a predicate.
        enabled: False undoes an earlier call (every wrapped block of `model`).

    Returns:
        The qualified names of the blocks now checkpointed (enabling) or no longer
        checkpointed (disabling). Calling it twice wraps nothing twice.

    Raises:
        TypeError: if `model` is not an `nn.Module` or `blocks` is not a selector.
        ValueError: if no block is found.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"`checkpoint_blocks` takes an nn.Module. Received: {type(model).__name__}."
        )
    if not enabled:
        names = checkpointed_blocks(model)
        for name in names:
            _unwrap(model.get_submodule(name))
        return names
    found = _find_blocks(model, _predicate(blocks))
    if not found:
        raise ValueError(
            f"`checkpoint_blocks` found no blocks in {type(model).__name__} with "
            f"blocks={_describe(blocks)}. Pass `blocks=YourBlockClass` (or a tuple of classes, "
            "or a predicate `lambda module: ...`) naming the repeated layers to checkpoint."
        )
    for _, module in found:
        _wrap(module)
    return [name for name, _ in found]


def checkpointed_blocks(model: nn.Module) -> list[str]:
    """The qualified names of `model`'s checkpointed blocks, in module order."""
    return [name for name, module in model.named_modules() if _is_wrapped(module)]


@contextlib.contextmanager
def gradient_checkpointing(model: nn.Module, blocks: BlockSelector = None) -> Iterator[list[str]]:
    """Checkpoint `model`'s blocks for the `with` block; those it wrapped are unwrapped after.

    Blocks the caller had already checkpointed stay so. The Learner uses it for
    `gradient_checkpointing()`.
    """
    before = set(checkpointed_blocks(model))
    names = checkpoint_blocks(model, blocks)
    try:
        yield names
    finally:
        for name in names:
            if name not in before:
                _unwrap(model.get_submodule(name))


def _predicate(blocks: BlockSelector) -> Callable[[nn.Module, nn.Module | None], bool]:
    if blocks is None:
        return lambda module, parent: isinstance(parent, nn.ModuleList)
    if isinstance(blocks, type) or (
        isinstance(blocks, tuple) and blocks and all(isinstance(b, type) for b in blocks)
    ):
        types_ = blocks
        return lambda module, parent: isinstance(module, types_)
    if callable(blocks):
        chosen = blocks
        return lambda module, parent: bool(chosen(module))
    raise TypeError(
        "`blocks` must be None, a module class, a tuple of module classes, or a predicate "
        f"`lambda module: ...`. Received: {blocks!r}."
    )


def _find_blocks(
    model: nn.Module, chosen: Callable[[nn.Module, nn.Module | None], bool]
) -> list[tuple[str, nn.Module]]:
    """The outermost submodules `chosen` picks (a block inside a block is not wrapped)."""
    found: list[tuple[str, nn.Module]] = []

    def visit(prefix: str, module: nn.Module) -> None:
        for name, child in module.named_children():
            qualified = f"{prefix}.{name}" if prefix else name
            if chosen(child, module):
                found.append((qualified, child))
            else:
                visit(qualified, child)

    visit("", model)
    return found


def _describe(blocks: BlockSelector) -> str:
    if isinstance(blocks, type):
        return blocks.__name__
    return repr(blocks)


def _is_wrapped(module: nn.Module) -> bool:
    return type(module).__dict__.get("_burnish_checkpointed", False)


def _wrap(module: nn.Module) -> None:
    if not _is_wrapped(module):
        module.__class__ = _checkpointed_class(type(module))


def _unwrap(module: nn.Module) -> None:
    if _is_wrapped(module):
        module.__class__ = type(module).__bases__[0]


_CLASSES: dict[type, type] = {}


def _checkpointed_class(cls: type) -> type:
    """`cls` with its `forward` under `torch.utils.checkpoint` when gradients are recorded.

    The module's class is swapped for this subclass (same name, same state): copies,
    `bn.valid` twins and `isinstance` checks all keep working, and the parameters' names do
    not change.
    """
    if cls not in _CLASSES:

        def forward(self: nn.Module, *args: Any, **kwargs: Any) -> Any:
            inner = super(subclass, self).forward  # type: ignore[arg-type]
            if not torch.is_grad_enabled():
                return inner(*args, **kwargs)
            return checkpoint(inner, *args, use_reentrant=False, **kwargs)

        namespace = {"forward": forward, "_burnish_checkpointed": True}
        subclass = type(cls.__name__, (cls,), namespace)
        subclass.__qualname__ = cls.__qualname__
        subclass.__module__ = cls.__module__
        _CLASSES[cls] = subclass
    return _CLASSES[cls]

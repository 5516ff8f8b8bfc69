"""Explicit gradients: `bn.backward(loss)` returns them instead of storing them in `.grad`.

Burn's `loss.backward()` returns a `Gradients` container; nothing is accumulated on the
parameters, so there is no `zero_grad` and stale gradients cannot leak into a step.

How the parameters are found (see README.md next to this file for the measurements):
`backward` only records the loss. The gradients are computed once, on first use:

* `GradientsParams.from_grads(grads, model)` (the common path) asks autograd for the
  gradients of `model`'s parameters directly: no graph walk at all.
* Anything else (`bn.grad`, `from_module`, `from_params`) walks the autograd graph once to
  collect every leaf tensor the loss depends on, then computes all their gradients in one
  pass.

Either way the gradients come from one `torch.autograd.grad` call (or, under
`torch.distributed`, one `torch.autograd.backward` whose `.grad` side effects are undone so
DistributedDataParallel's reducer hooks still fire), and `.grad` is left as it was.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor

__all__ = ["Gradients", "backward", "grad"]


def _accumulate_grad_type() -> type:
    leaf = torch.zeros(1, requires_grad=True)
    return type(leaf.view(1).grad_fn.next_functions[0][0])


_ACCUMULATE_GRAD = _accumulate_grad_type()


class Gradients:
    """The gradients of one loss, keyed by the tensors they belong to (Burn: `Gradients`).

    Created by `backward`; read with `grad(tensor, grads)` or turned into per-parameter
    gradients with `GradientsParams.from_grads` / `from_module` / `from_params`.
    """

    __slots__ = ("_grads", "_loss", "_tensors")

    def __init__(self, loss: Tensor) -> None:
        self._loss: Tensor | None = loss
        self._grads: dict[int, Tensor] = {}
        self._tensors: dict[int, Tensor] = {}

    def __len__(self) -> int:
        self._materialize(None)
        return len(self._grads)

    def __repr__(self) -> str:
        state = "pending" if self._loss is not None else f"{len(self._grads)} tensors"
        return f"Gradients({state})"

    def get(self, tensor: Tensor) -> Tensor | None:
        """The gradient of `tensor`, or None if the loss does not depend on it."""
        self._materialize(None)
        return self._grads.get(id(tensor))

    def remove(self, tensor: Tensor) -> Tensor | None:
        """Remove and return the gradient of `tensor` (None if absent)."""
        self._materialize(None)
        self._tensors.pop(id(tensor), None)
        return self._grads.pop(id(tensor), None)

    def _materialize(self, params: list[Tensor] | None) -> None:
        """Run the backward pass once, for `params` or (None) every leaf the loss reaches."""
        loss = self._loss
        if loss is None:
            return
        self._loss = None
        inputs = _graph_leaves(loss) if params is None else [p for p in params if p.requires_grad]
        if not inputs:
            return
        grads = _compute(loss, inputs)
        seen: set[int] = set()
        for tensor, value in zip(inputs, grads):
            if value is None:
                continue
            value = _owned(tensor, value, seen)
            self._grads[id(tensor)] = value
            self._tensors[id(tensor)] = tensor


def backward(loss: Tensor) -> Gradients:
    """Compute the gradients of `loss` for every tensor it depends on (Burn: `loss.backward()`).

    No `zero_grad` is ever needed: the result holds the gradients of this loss only, and the
    `.grad` attribute of the parameters is left untouched. A non-scalar loss is seeded with
    ones, as Burn does.

    Args:
        loss: a tensor computed with autograd enabled from tensors that require gradients.

    Returns:
        The gradients, to pass to `GradientsParams.from_grads(grads, model)` or `grad`.

    Raises:
        TypeError: if `loss` is not a tensor.
        ValueError: if `loss` does not require gradients (computed under `torch.no_grad`,
            on `bn.valid(model)`, or from tensors that do not require gradients).

    Example:
        >>> grads = bn.backward(loss)
        >>> grads = GradientsParams.from_grads(grads, model)
        >>> model = optim.step(1e-3, model, grads)
    """
    if not isinstance(loss, Tensor):
        raise TypeError(f"`loss` must be a torch.Tensor. Received: {type(loss).__name__}.")
    if not loss.requires_grad or loss.grad_fn is None:
        raise ValueError(
            "`loss` does not require gradients, so there is nothing to differentiate. Received "
            f"a tensor with requires_grad={loss.requires_grad}. Compute it from the training "
            "model (not `bn.valid(model)`) and outside `torch.no_grad()`."
        )
    return Gradients(loss)


def grad(tensor: Tensor, grads: Gradients) -> Tensor | None:
    """The gradient of `tensor` in `grads` (Burn: `tensor.grad(&grads)`), or None."""
    if not isinstance(grads, Gradients):
        raise TypeError(
            f"`grads` must be the Gradients returned by bn.backward. Received: "
            f"{type(grads).__name__}."
        )
    return grads.get(tensor)


def _graph_leaves(loss: Tensor) -> list[Tensor]:
    """Every leaf tensor (AccumulateGrad node) reachable from `loss`, in discovery order."""
    root = loss.grad_fn
    if type(root) is _ACCUMULATE_GRAD:  # the loss is itself a leaf requiring grad
        return [root.variable]
    leaves: list[Tensor] = []
    seen = {root}
    stack = [root]
    while stack:
        for node, _ in stack.pop().next_functions:
            if node is None or node in seen:
                continue
            seen.add(node)
            if type(node) is _ACCUMULATE_GRAD:
                leaves.append(node.variable)
            else:
                stack.append(node)
    return leaves


def _compute(loss: Tensor, inputs: list[Tensor]) -> Iterable[Tensor | None]:
    seed = None if loss.dim() == 0 else torch.ones_like(loss)
    if _distributed():
        return _backward_restoring_grad(loss, inputs, seed)
    return torch.autograd.grad(loss, inputs, grad_outputs=seed, allow_unused=True)


def _distributed() -> bool:
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized()


def _backward_restoring_grad(loss: Tensor, inputs: list[Tensor], seed) -> list[Tensor | None]:
    """`loss.backward(inputs=...)` (so DDP's hooks run), then put every `.grad` back."""
    stale = [t.grad for t in inputs]
    for tensor in inputs:
        tensor.grad = None
    try:
        torch.autograd.backward(loss, grad_tensors=seed, inputs=inputs)
        return [t.grad for t in inputs]
    finally:
        for tensor, old in zip(inputs, stale):
            tensor.grad = old


def _owned(tensor: Tensor, value: Tensor, seen: set[int]) -> Tensor:
    """A gradient safe to update in place: own storage, same strides as its tensor.

    Autograd may hand back expanded views or one tensor shared by two inputs; optimizers and
    clipping write into gradients, so those (rare) cases are copied, as AccumulateGrad does.
    """
    pointer = value.data_ptr()
    if value.stride() != tensor.stride() or pointer in seen:
        value = torch.empty_like(tensor, dtype=value.dtype).copy_(value)
        pointer = value.data_ptr()
    seen.add(pointer)
    return value

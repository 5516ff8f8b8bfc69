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

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from itertools import compress, repeat
from operator import attrgetter, is_not
from typing import cast

import torch
from torch import Tensor

__all__ = ["Gradients", "backward", "grad"]


def _accumulate_grad_type() -> type:
    leaf = torch.zeros(1, requires_grad=True)
    view = leaf.view(1).grad_fn
    assert view is not None  # a view of a tensor requiring grad always has a grad_fn
    return type(view.next_functions[0][0])


_ACCUMULATE_GRAD = _accumulate_grad_type()
_REQUIRES_GRAD = attrgetter("requires_grad")
_DATA_PTR = Tensor.data_ptr
_STRIDE = Tensor.stride
_is_not_none = partial(is_not, None)
# Set by `GradScaler.scaling()`: `backward` then differentiates the scaled loss.
_loss_scaler: Callable[[Tensor], Tensor] | None = None


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
        inputs = _graph_leaves(loss) if params is None else _requiring_grad(params)
        if not inputs:
            return
        values = _owned(inputs, _compute(loss, inputs))
        present = list(map(_is_not_none, values))
        tensors = list(compress(inputs, present))
        keys = list(map(id, tensors))
        self._grads.update(zip(keys, cast("Iterable[Tensor]", compress(values, present))))
        self._tensors.update(zip(keys, tensors))

    def _take_all(
        self, params: Sequence[Tensor], strides: list[tuple[int, ...]]
    ) -> list[Tensor | None]:
        """The gradients of `params` in order (None where absent); empties this container.

        Pending, the backward pass runs for exactly the `params` that require gradients.
        `strides` are the parameters' strides, the layout their gradients get.
        """
        if self._loss is None:
            values = list(map(self._grads.get, map(id, params)))
        else:
            values = self._compute_for(params, strides)
        self._grads.clear()
        self._tensors.clear()
        return values

    def _compute_for(
        self, params: Sequence[Tensor], strides: list[tuple[int, ...]]
    ) -> list[Tensor | None]:
        loss, self._loss = self._loss, None
        assert loss is not None  # only called while the backward pass is pending
        try:  # autograd checks that every input requires grad before running anything
            return _owned(params, _compute(loss, params), strides)
        except RuntimeError:
            mask = list(map(_REQUIRES_GRAD, params))
            if all(mask):
                raise
        inputs = list(compress(params, mask))
        if not inputs:
            return [None] * len(params)
        values = iter(_owned(inputs, _compute(loss, inputs), list(compress(strides, mask))))
        return [next(values) if wanted else None for wanted in mask]


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

    Inside `GradScaler.scaling()` (the Learner's float16 mixed precision), the loss is
    multiplied by the scaler's scale first, so the returned gradients are scaled.

    Example:
        One step of a custom training loop (Burn: `loss.backward()`,
        `GradientsParams::from_grads`, `optim.step(lr, model, grads)`):

        >>> import torch
        >>> import burnish as bn
        >>> from burnish.optim import GradientsParams, SgdConfig
        >>> model, optim = torch.nn.Linear(3, 1), SgdConfig().init()
        >>> loss = model(torch.ones(4, 3)).pow(2).mean()
        >>> grads = bn.backward(loss)
        >>> bn.grad(model.bias, grads).shape  # one tensor's gradient, Burn's `tensor.grad`
        torch.Size([1])
        >>> grads = GradientsParams.from_grads(grads, model)
        >>> model = optim.step(1e-2, model, grads)
        >>> model.weight.grad is None  # `.grad` is never written: no `zero_grad`
        True
    """
    if not isinstance(loss, Tensor):
        raise TypeError(f"`loss` must be a torch.Tensor. Received: {type(loss).__name__}.")
    if not loss.requires_grad or (not _compiling() and loss.grad_fn is None):
        raise ValueError(
            "`loss` does not require gradients, so there is nothing to differentiate. Received "
            f"a tensor with requires_grad={loss.requires_grad}. Compute it from the training "
            "model (not `bn.valid(model)`) and outside `torch.no_grad()`."
        )
    if _loss_scaler is not None:
        loss = _loss_scaler(loss)
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
        # AccumulateGrad nodes hold their leaf in `.variable`; torch's Node stub omits it.
        return [root.variable]  # type: ignore[union-attr]
    assert root is not None  # `backward` refuses a loss without a grad_fn
    leaves: list[Tensor] = []
    seen = {root}
    stack = [root]
    while stack:
        for node, _ in stack.pop().next_functions:
            if node is None or node in seen:
                continue
            seen.add(node)
            if type(node) is _ACCUMULATE_GRAD:
                # AccumulateGrad nodes hold their leaf in `.variable`; torch's Node stub omits it.
                leaves.append(node.variable)  # type: ignore[attr-defined]
            else:
                stack.append(node)
    return leaves


def _compute(loss: Tensor, inputs: Sequence[Tensor]) -> Iterable[Tensor | None]:
    seed = None if loss.dim() == 0 else torch.ones_like(loss)
    if _distributed():
        return _backward_restoring_grad(loss, inputs, seed)
    return torch.autograd.grad(loss, inputs, grad_outputs=seed, allow_unused=True)


def _compiling() -> bool:
    """Whether `torch.compile` is tracing this call (the Learner's compiled whole step)."""
    return torch.compiler.is_compiling()


def _distributed() -> bool:
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized()


def _backward_restoring_grad(
    loss: Tensor, inputs: Sequence[Tensor], seed: Tensor | None
) -> list[Tensor | None]:
    """`loss.backward(inputs=...)` (so DDP's hooks run), then put every `.grad` back.

    FSDP's sharded parameters are not in the graph (its hooks reduce-scatter the gradients of
    the gathered parameters into their `.grad`), so for them the backward pass reaches every
    leaf.
    """
    from torch.distributed.tensor import DTensor

    stale = [t.grad for t in inputs]
    for tensor in inputs:
        tensor.grad = None
    try:
        sharded = any(map(isinstance, inputs, repeat(DTensor)))
        torch.autograd.backward(loss, grad_tensors=seed, inputs=None if sharded else inputs)
        return [t.grad for t in inputs]
    finally:
        for tensor, old in zip(inputs, stale):
            tensor.grad = old


def _requiring_grad(params: Sequence[Tensor]) -> list[Tensor]:
    return list(compress(params, map(_REQUIRES_GRAD, params)))


def _owned(
    tensors: Sequence[Tensor],
    values: Iterable[Tensor | None],
    strides: list[tuple[int, ...]] | None = None,
) -> list[Tensor | None]:
    """Gradients safe to update in place: own storage, the strides of their tensors.

    Autograd may hand back expanded views or one tensor shared by two inputs; optimizers and
    clipping write into gradients, so those (rare) cases are copied, as AccumulateGrad does.
    The common case (no such gradient) is checked with C-level `map` calls only. `strides`
    (default: read from `tensors`) are the layouts expected; a gradient that differs is
    copied into its tensor's current layout.
    """
    values = list(values)
    if _compiling():  # traced: the graph's outputs are fresh tensors, and have no storage yet
        return values
    if strides is None:
        strides = list(map(_STRIDE, tensors))
    present = list(map(_is_not_none, values))
    grads = cast("list[Tensor]", values if all(present) else list(compress(values, present)))
    expected = strides if len(grads) == len(values) else list(compress(strides, present))
    pointers = list(map(_DATA_PTR, grads))
    if len(set(pointers)) == len(pointers) and list(map(_STRIDE, grads)) == expected:
        return values
    seen: set[int] = set()
    return [None if v is None else _own(t, v, seen) for t, v in zip(tensors, values)]


def _own(tensor: Tensor, value: Tensor, seen: set[int]) -> Tensor:
    pointer = value.data_ptr()
    if value.stride() != tensor.stride() or pointer in seen:
        value = torch.empty_like(tensor, dtype=value.dtype).copy_(value)
        pointer = value.data_ptr()
    seen.add(pointer)
    return value

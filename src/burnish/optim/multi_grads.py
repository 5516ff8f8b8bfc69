"""Gradients of one model from several sources (Burn's `MultiGradientsParams`).

Each source is a `GradientsParams` with the device it was computed on, e.g. the gradients of
one batch on each of two devices. `remove(param)` takes a parameter's gradient out of every
source and sums them on one device; `Learner.optimizer_step_multi(grads)` steps the model with
the sums.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import torch
from torch import Tensor, nn

from burnish.optim.params import GradientsParams, ParamId

__all__ = ["MultiGradientsParams"]


class MultiGradientsParams:
    """Several `GradientsParams` of the same parameters, each with its device.

    Parameters are matched by id (qualified name, as `"linear1.bias"`), so the sources may
    come from forks of one model on different devices (Burn's `ParamId`s are shared by forks).

    Example:
        >>> import torch
        >>> import burnish as bn
        >>> from burnish.optim import GradientsParams, MultiGradientsParams
        >>> model = torch.nn.Linear(2, 1)
        >>> def grads_of(x):
        ...     return GradientsParams.from_grads(bn.backward(model(x).sum()), model)
        >>> multi = MultiGradientsParams()
        >>> multi.grads.append((grads_of(torch.ones(1, 2)), torch.device("cpu")))
        >>> multi.grads.append((grads_of(2 * torch.ones(1, 2)), torch.device("cpu")))
        >>> multi.remove("weight")[0]
        tensor([[3., 3.]])

    Attributes:
        grads: the sources, `(GradientsParams, device)` pairs (Burn's public `grads` field).
    """

    def __init__(
        self, grads: Iterable[tuple[GradientsParams, torch.device | str]] | None = None
    ) -> None:
        self.grads: list[tuple[GradientsParams, torch.device]] = []
        for source in grads or ():
            self.grads.append(_source(source))

    def remove(self, param: ParamId) -> tuple[Tensor, torch.device] | None:
        """Remove the gradient of `param` from every source; return their sum and its device.

        The sum is on the device of one source that holds the parameter, always the same one
        for the same parameter (Burn's rule: chosen from the parameter's id, so the work of
        summing is spread over the devices). None if no source holds a gradient for it.
        """
        self.grads = [_source(source) for source in self.grads]  # the field may be appended to
        name = param if isinstance(param, str) else None
        count = len(self.grads)
        start = zlib.crc32(name.encode()) % count if name is not None and count else 0
        selected: tuple[Tensor, torch.device] | None = None
        for offset in range(count):
            grads, device = self.grads[(start + offset) % count]
            grad = grads.remove(param)
            if grad is None:
                continue
            if selected is None:
                selected = (grad.to(device), device)
            else:
                selected = (selected[0] + grad.to(selected[1]), selected[1])
        return selected

    def into_params(self, module: nn.Module) -> GradientsParams:
        """The summed gradient of each of `module`'s parameters that has one, on its device.

        The sources are emptied of those parameters, as by `remove`.
        """
        result = GradientsParams()
        for name, param in module.named_parameters():
            summed = self.remove(name)
            if summed is not None:
                result.register(param, summed[0].to(param.device), name=name)
        return result

    def is_empty(self) -> bool:
        """Whether no source holds a gradient."""
        return all(grads.is_empty() for grads, _ in self.grads)

    def __repr__(self) -> str:
        sources = ", ".join(f"({grads!r}, {device})" for grads, device in self.grads)
        return f"MultiGradientsParams([{sources}])"


def _source(source: object) -> tuple[GradientsParams, torch.device]:
    if (
        not isinstance(source, tuple)
        or len(source) != 2
        or not isinstance(source[0], GradientsParams)
    ):
        raise TypeError(
            "Each source of a MultiGradientsParams is a `(GradientsParams, device)` pair. "
            f"Received: {source!r}. Write e.g. `multi.grads.append((grads, device))`."
        )
    return source[0], torch.device(source[1])

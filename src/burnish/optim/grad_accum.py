"""Gradient accumulation over several backward passes (Burn: `GradientsAccumulator`)."""

from __future__ import annotations

from functools import partial
from operator import is_not, itemgetter
from typing import Any, cast

import torch
from torch import Tensor, nn

from burnish.optim.param_table import param_table
from burnish.optim.params import GradientsParams

__all__ = ["GradientsAccumulator"]

_is_not_none = partial(is_not, None)
_GRAD = itemgetter(2)


class GradientsAccumulator:
    """Sums `GradientsParams` of one module; `grads()` returns the sum and resets.

    Example:
        >>> acc = GradientsAccumulator()
        >>> for batch in micro_batches:
        ...     acc.accumulate(model, GradientsParams.from_grads(bn.backward(loss), model))
        >>> model = optim.step(lr, model, acc.grads())
    """

    def __init__(self) -> None:
        self._grads = GradientsParams()

    def accumulate(self, module: nn.Module, grads: GradientsParams) -> None:
        """Add `grads` of `module`'s parameters to the running sum (consumes `grads`).

        The running sum is updated in place (`sum += new`), as `.grad` accumulation does.
        """
        names, params, news = grads._take_for(module)
        sums = list(map(self._grads._entries.get, map(id, params)))
        if not any(map(_is_not_none, sums)):
            self._grads._extend(names, params, news)
        elif all(map(_is_not_none, sums)):
            entries = cast("list[tuple[str, Tensor, Tensor]]", sums)  # no None: checked above
            torch._foreach_add_(list(map(_GRAD, entries)), news)
        else:
            for name, param, new in zip(names, params, news):
                old = self._grads.get(param)
                if old is None:
                    self._grads.register(param, new, name=name)
                else:
                    old.add_(new)

    def grads(self) -> GradientsParams:
        """The accumulated gradients; the accumulator starts again from zero."""
        grads, self._grads = self._grads, GradientsParams()
        return grads

    def __len__(self) -> int:
        return len(self._grads)

    def to_record(self) -> dict[str, Any]:
        """The running sum keyed by parameter name (copies), for mid-accumulation checkpoints."""
        return {name: grad.detach().clone() for name, grad in self._grads.items()}

    def load_record(self, record: dict[str, Any], module: nn.Module) -> GradientsAccumulator:
        """Restore a `to_record()` sum for `module`'s parameters; returns the accumulator.

        Raises:
            ValueError: if the record names a parameter `module` does not have.
        """
        params = param_table(module).by_name
        unknown = sorted(set(record) - set(params))
        if unknown:
            raise ValueError(
                f"The accumulator record has gradients for {unknown}, which "
                f"{type(module).__name__} does not have. Load it into the model it was taken from."
            )
        self._grads = GradientsParams()
        for name, grad in record.items():
            param = params[name]
            self._grads.register(param, grad.to(param.device, param.dtype), name=name)
        return self

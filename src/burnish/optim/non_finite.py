"""Skip an optimizer step whose gradients hold an inf or a NaN, decided on the device.

`NonFiniteGuard.step(optim, lr, model, grads)` checks every gradient with the fused kernel the
float16 loss scaler uses (`torch._amp_foreach_non_finite_check_and_unscale_`, here with a scale
of 1) and hands the resulting flag to the optimizer's own skip (`found_inf`): Adam, AdamW, SGD
(and AdaGrad on the CPU) skip inside their fused kernels, parameters and state untouched,
without the host ever reading the flag. The other optimizers read it back once per step, as
`GradScaler` and `torch.amp.GradScaler` do for them.

    guard = NonFiniteGuard()
    model, skipped = guard.step(optim, lr, model, grads)   # skipped: 0-dim 1.0 or 0.0
"""

from __future__ import annotations

from operator import itemgetter
from typing import TypeVar

import torch
from torch import Tensor, nn

from burnish.optim.base import Optimizer
from burnish.optim.params import GradientsParams

__all__ = ["NonFiniteGuard"]

M = TypeVar("M", bound=nn.Module)
_GRAD = itemgetter(2)


class NonFiniteGuard:
    """Steps an optimizer unless one of the gradients is inf or NaN.

    The check is one multi-tensor kernel over all gradients (no Python work per tensor, no
    host sync); a skipped step leaves the parameters and the optimizer state as they were.
    """

    def __init__(self) -> None:
        self._one: Tensor | None = None  # the "scale" of the check, 1.0 on the device

    def step(
        self, optim: Optimizer, lr: float, model: M, grads: GradientsParams
    ) -> tuple[M, Tensor]:
        """`optim.step(lr, model, grads)` unless a gradient is not finite.

        Returns:
            The model, and a fresh 0-dim float32 device tensor: 1.0 if the step was skipped,
            else 0.0 (never read back here).
        """
        values = list(map(_GRAD, grads._entries.values()))
        if not values:
            return optim.step(lr, model, grads), torch.zeros(())
        device = values[0].device
        if self._one is None or self._one.device != device:
            self._one = torch.ones((), dtype=torch.float32, device=device)
        found_inf = torch.zeros((), dtype=torch.float32, device=device)
        torch._amp_foreach_non_finite_check_and_unscale_(values, found_inf, self._one)
        return optim._step(lr, model, grads, found_inf), found_inf

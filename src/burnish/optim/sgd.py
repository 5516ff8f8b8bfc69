"""Stochastic gradient descent (Burn: `SgdConfig` / `Sgd`)."""

from __future__ import annotations

from functools import partial
from operator import is_not, methodcaller
from typing import Any

from torch import Tensor
from torch.optim.sgd import sgd

from burnish.config import config
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.kernel_state import fused_supported
from burnish.optim.momentum import MomentumConfig

__all__ = ["Sgd", "SgdConfig"]

_is_not_none = partial(is_not, None)
_VELOCITY = methodcaller("get", "velocity")


@config
class SgdConfig:
    """Configuration of `Sgd`; every part is optional, as in Burn.

    Args:
        weight_decay: L2 penalty added to the gradient.
        momentum: momentum (Burn's defaults: 0.9, dampening 0.1).
        gradient_clipping: per-tensor clipping applied first.

    Example:
        >>> optim = SgdConfig(momentum=MomentumConfig()).init()
        >>> model = optim.step(0.01, model, grads)
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig | None = None
    gradient_clipping: GradientClippingConfig | None = None

    def init(self) -> Sgd:
        """Build the optimizer."""
        return Sgd(self)


class Sgd(Optimizer):
    """SGD with optional weight decay and (Nesterov) momentum.

    Per step: `g = clip(g)`; `g += penalty * p`; momentum as in `MomentumConfig`;
    `p -= lr * g`. Runs `torch.optim.sgd.sgd` (foreach). Robbins & Monro,
    1951, "A Stochastic Approximation Method".
    """

    def __init__(self, config: SgdConfig) -> None:
        super().__init__(config.gradient_clipping)
        self.config = config

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        return {"velocity": None} if self.config.momentum is not None else {}

    def _hyper_parameters(self) -> dict[str, Any]:
        """The keyword arguments of torch's `sgd` kernel that come from the config."""
        momentum, decay = self.config.momentum, self.config.weight_decay
        return {
            "weight_decay": decay.penalty if decay else 0.0,
            "momentum": momentum.momentum if momentum else 0.0,
            "dampening": momentum.dampening if momentum else 0.0,
            "nesterov": momentum.nesterov if momentum else False,
            "maximize": False,
        }

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        momentum = self.config.momentum
        buffers = list(map(_VELOCITY, states)) if momentum is not None else [None] * len(params)
        first = momentum is not None and not all(map(_is_not_none, buffers))
        sgd(
            params,
            grads,
            buffers,
            lr=lr,
            foreach=True,
            **self._hyper_parameters(),
        )
        if first:  # the kernel created the missing velocities in `buffers`
            for state, buffer in zip(states, buffers):
                state["velocity"] = buffer

    def _update_unless(
        self,
        found_inf: Tensor,
        lr: float,
        params: list[Tensor],
        grads: list[Tensor],
        states: list[dict],
    ) -> None:
        """The fused kernel skips the step on the device when `found_inf` is set.

        A first momentum step reads the flag back instead: the fused kernel would leave the
        new velocities uninitialised when it skips.
        """
        momentum = self.config.momentum
        buffers = list(map(_VELOCITY, states)) if momentum is not None else [None] * len(params)
        first = momentum is not None and not all(map(_is_not_none, buffers))
        if first or not fused_supported(params, ("cpu", "cuda", "mps")):
            super()._update_unless(found_inf, lr, params, grads, states)
            return
        sgd(
            params,
            grads,
            buffers,
            lr=lr,
            fused=True,
            found_inf=found_inf,
            **self._hyper_parameters(),
        )

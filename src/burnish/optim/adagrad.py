"""AdaGrad (Burn: `AdaGradConfig` / `AdaGrad`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.optim.adagrad import adagrad

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.kernel_state import column, fused_supported, new_step, steps_on_device

__all__ = ["AdaGrad", "AdaGradConfig"]


@config
class AdaGradConfig:
    """Configuration of `AdaGrad`, with Burn's defaults (`epsilon=1e-5`).

    Args:
        lr_decay: the step size at step t is `lr / (1 + (t - 1) * lr_decay)`.
        epsilon: added to the root of the sum of squared gradients.
        weight_decay: L2 penalty added to the gradient.
        grad_clipping: per-tensor clipping applied first.
    """

    lr_decay: float = 0.0
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        for name in ("lr_decay", "epsilon"):
            if not getattr(self, name) >= 0.0:
                raise ConfigError(
                    f"`{name}` must be >= 0. Received: {name}={getattr(self, name)!r}."
                )

    def init(self) -> AdaGrad:
        """Build the optimizer."""
        return AdaGrad(self)


class AdaGrad(Optimizer):
    """AdaGrad: Duchi, Hazan & Singer, 2011, "Adaptive Subgradient Methods".

    Per step t: `s += g^2`; `p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)`.
    Runs `torch.optim.adagrad.adagrad` (foreach).
    """

    def __init__(self, config: AdaGradConfig) -> None:
        super().__init__(config.grad_clipping)
        self.config = config

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        return {
            "step": new_step(),
            "sum": torch.zeros_like(param, memory_format=torch.preserve_format),
        }

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        cfg = self.config
        adagrad(
            params,
            grads,
            column(states, "sum"),
            column(states, "step"),
            foreach=True,
            lr=lr,
            weight_decay=cfg.weight_decay.penalty if cfg.weight_decay else 0.0,
            lr_decay=cfg.lr_decay,
            eps=cfg.epsilon,
            maximize=False,
        )

    def _update_unless(
        self,
        found_inf: Tensor,
        lr: float,
        params: list[Tensor],
        grads: list[Tensor],
        states: list[dict],
    ) -> None:
        """On the CPU, the fused kernel skips the step when `found_inf` is set."""
        if not fused_supported(params, ("cpu",)):
            super()._update_unless(found_inf, lr, params, grads, states)
            return
        cfg = self.config
        adagrad(
            params,
            grads,
            column(states, "sum"),
            steps_on_device(states, params),
            fused=True,
            found_inf=found_inf,
            lr=lr,
            weight_decay=cfg.weight_decay.penalty if cfg.weight_decay else 0.0,
            lr_decay=cfg.lr_decay,
            eps=cfg.epsilon,
            maximize=False,
        )

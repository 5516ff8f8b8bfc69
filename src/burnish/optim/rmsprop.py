"""RMSProp (Burn: `RmsPropConfig` / `RmsProp`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.optim.rmsprop import rmsprop

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.kernel_state import column, new_step

__all__ = ["RmsProp", "RmsPropConfig"]


@config
class RmsPropConfig:
    """Configuration of `RmsProp`, with Burn's defaults (momentum 0.9, epsilon 1e-5).

    Args:
        alpha: smoothing constant of the squared-gradient average.
        momentum: momentum factor (0 disables the buffer).
        epsilon: added to the root of the average.
        centered: normalise by the variance estimate instead of the second moment.
        weight_decay: L2 penalty added to the gradient.
        grad_clipping: per-tensor clipping applied first.
    """

    alpha: float = 0.99
    momentum: float = 0.9
    epsilon: float = 1e-5
    centered: bool = False
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        for name in ("alpha", "momentum", "epsilon"):
            if not getattr(self, name) >= 0.0:
                raise ConfigError(
                    f"`{name}` must be >= 0. Received: {name}={getattr(self, name)!r}."
                )

    def init(self) -> RmsProp:
        """Build the optimizer."""
        return RmsProp(self)


class RmsProp(Optimizer):
    """RMSProp: Hinton, 2012, "Neural Networks for Machine Learning", lecture 6e.

    Per step: `s = alpha s + (1 - alpha) g^2`; centered: `c = alpha c + (1 - alpha) g`,
    `s' = s - c^2` (else `s' = s`); `u = g / (sqrt(s') + eps)`; with momentum
    `b = momentum b + u` and `p -= lr b`, else `p -= lr u`. Runs
    `torch.optim.rmsprop.rmsprop` (foreach).
    """

    def __init__(self, config: RmsPropConfig) -> None:
        super().__init__(config.grad_clipping)
        self.config = config

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        state = {"step": new_step(), "square_avg": _zeros(param)}
        if self.config.centered:
            state["grad_avg"] = _zeros(param)
        if self.config.momentum > 0:
            state["momentum_buffer"] = _zeros(param)
        return state

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        cfg = self.config
        rmsprop(
            params,
            grads,
            column(states, "square_avg"),
            column(states, "grad_avg") if cfg.centered else [],
            column(states, "momentum_buffer") if cfg.momentum > 0 else [],
            column(states, "step"),
            foreach=True,
            lr=lr,
            alpha=cfg.alpha,
            eps=cfg.epsilon,
            weight_decay=cfg.weight_decay.penalty if cfg.weight_decay else 0.0,
            momentum=cfg.momentum,
            centered=cfg.centered,
        )


def _zeros(param: Tensor) -> Tensor:
    return torch.zeros_like(param, memory_format=torch.preserve_format)

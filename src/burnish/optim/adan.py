"""Adan (Burn main: `AdanConfig` / `Adan`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.kernel_state import column, new_step

__all__ = ["Adan", "AdanConfig"]


@config
class AdanConfig:
    """Configuration of `Adan`, with Burn's defaults.

    Args:
        beta_1: decay of the first moment (Burn default 0.98).
        beta_2: decay of the gradient-difference moment (0.92).
        beta_3: decay of the second moment (0.99).
        epsilon: added to the root of the second moment (1e-8).
        weight_decay: decay rate `wd` (0: none).
        no_prox: apply the decay as AdamW does (`p *= 1 - lr wd` before the update) instead of
            the proximal form (`p = (p - lr u) / (1 + lr wd)`, the default).
        grad_clipping: per-tensor clipping applied first.
    """

    beta_1: float = 0.98
    beta_2: float = 0.92
    beta_3: float = 0.99
    epsilon: float = 1e-8
    weight_decay: float = 0.0
    no_prox: bool = False
    grad_clipping: GradientClippingConfig | None = None

    def __post_init__(self) -> None:
        for name in ("beta_1", "beta_2", "beta_3"):
            beta = getattr(self, name)
            if not 0.0 <= beta < 1.0:
                raise ConfigError(f"`{name}` must be in [0, 1). Received: {name}={beta!r}.")
        for name in ("epsilon", "weight_decay"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ConfigError(f"`{name}` must be >= 0. Received: {name}={value!r}.")

    def init(self) -> Adan:
        """Build the optimizer."""
        return Adan(self)


class Adan(Optimizer):
    """Adan: Xie et al., 2022, "Adan: Adaptive Nesterov Momentum Algorithm for Faster
    Optimizing Deep Models" (arXiv:2208.06677), as Burn implements it.

    Per step t, with gradient `g` and the previous one `g'` (`d = g - g'`, zero at t = 1):
    `m = b1 m + (1 - b1) g`, `n = b2 n + (1 - b2) d`, `v = b3 v + (1 - b3) (g + b2 d)^2`,
    `u = (m / (1 - b1^t) + b2 n / (1 - b2^t)) / (sqrt(v) / sqrt(1 - b3^t) + eps)`, then
    `p = (p - lr u) / (1 + lr wd)` (proximal) or `p = p (1 - lr wd) - lr u` (`no_prox`).
    State per parameter (Burn's names): `step`, `exp_avg` (m), `exp_avg_diff` (n),
    `exp_avg_sq` (v), `neg_pre_grad` (-g'). Multi-tensor (`torch._foreach_*`) throughout;
    the per-parameter bias corrections come from the CPU step counters as scalar lists.
    """

    def __init__(self, config: AdanConfig) -> None:
        super().__init__(config.grad_clipping)
        self.config = config

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        def zeros() -> Tensor:
            return torch.zeros_like(param, memory_format=torch.preserve_format)

        return {
            "step": new_step(),
            "exp_avg": zeros(),
            "exp_avg_sq": zeros(),
            "exp_avg_diff": zeros(),
            "neg_pre_grad": zeros(),
        }

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        cfg = self.config
        steps = column(states, "step")
        torch._foreach_add_(steps, 1.0)
        time = torch.stack(steps).double()  # CPU counters: no device sync
        neg_pre_grad = column(states, "neg_pre_grad")
        grad_diff = torch._foreach_add(neg_pre_grad, grads)
        if bool((time == 1).any()):  # a first step has no previous gradient: d = 0
            torch._foreach_mul_(grad_diff, (time > 1).double().tolist())
        exp_avg, exp_avg_diff = column(states, "exp_avg"), column(states, "exp_avg_diff")
        torch._foreach_lerp_(exp_avg, grads, 1.0 - cfg.beta_1)
        torch._foreach_lerp_(exp_avg_diff, grad_diff, 1.0 - cfg.beta_2)
        torch._foreach_mul_(grad_diff, cfg.beta_2)
        torch._foreach_add_(grad_diff, grads)  # g + b2 d
        torch._foreach_mul_(grad_diff, grad_diff)
        exp_avg_sq = column(states, "exp_avg_sq")
        torch._foreach_lerp_(exp_avg_sq, grad_diff, 1.0 - cfg.beta_3)
        torch._foreach_copy_(neg_pre_grad, grads)
        torch._foreach_neg_(neg_pre_grad)
        update = self._direction(time, exp_avg, exp_avg_diff, exp_avg_sq)
        self._move(lr, params, update)

    def _direction(
        self, time: Tensor, exp_avg: list[Tensor], exp_avg_diff: list[Tensor], exp_avg_sq: list
    ) -> Any:
        """`(m / (1 - b1^t) + b2 n / (1 - b2^t)) / (sqrt(v / (1 - b3^t)) + eps)`."""
        cfg = self.config
        denom = torch._foreach_sqrt(exp_avg_sq)
        torch._foreach_div_(denom, (1.0 - cfg.beta_3**time).sqrt().tolist())
        torch._foreach_add_(denom, cfg.epsilon)
        update = torch._foreach_div(exp_avg, (1.0 - cfg.beta_1**time).tolist())
        diff_scale = (cfg.beta_2 / (1.0 - cfg.beta_2**time)).tolist()
        torch._foreach_add_(update, torch._foreach_mul(exp_avg_diff, diff_scale))
        torch._foreach_div_(update, denom)
        return update

    def _move(self, lr: float, params: list[Tensor], update: Any) -> None:
        decay = lr * self.config.weight_decay
        if self.config.no_prox and self.config.weight_decay > 0.0:
            torch._foreach_mul_(params, 1.0 - decay)
        torch._foreach_mul_(update, lr)
        torch._foreach_sub_(params, update)
        if not self.config.no_prox and self.config.weight_decay > 0.0:
            torch._foreach_div_(params, 1.0 + decay)

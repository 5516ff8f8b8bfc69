"""Adam (Burn: `AdamConfig` / `Adam`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor
from torch.optim.adam import adam

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.base import Optimizer
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.kernel_state import column, fused_supported, new_step, steps_on_device

__all__ = ["Adam", "AdamConfig"]


@config
class AdamConfig:
    """Configuration of `Adam`, with Burn's defaults (note `epsilon=1e-5`, not 1e-8).

    Args:
        beta_1: decay of the first moment.
        beta_2: decay of the second moment.
        epsilon: added to the square root of the second moment.
        weight_decay: L2 penalty added to the gradient (coupled, as `torch.optim.Adam`).
        grad_clipping: per-tensor clipping applied first.
        amsgrad: AMSGrad (Burn main): divide by the running maximum of the second moment
            instead of the moment itself (`torch.optim.Adam(amsgrad=True)`).
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: WeightDecayConfig | None = None
    grad_clipping: GradientClippingConfig | None = None
    amsgrad: bool = False

    def __post_init__(self) -> None:
        _check_betas(self.beta_1, self.beta_2, self.epsilon)

    def init(self) -> Adam:
        """Build the optimizer."""
        return Adam(self)


class Adam(Optimizer):
    """Adam: Kingma & Ba, 2015, "Adam: A Method for Stochastic Optimization".

    Per step t: `m = b1 m + (1 - b1) g`, `v = b2 v + (1 - b2) g^2`,
    `p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)`.
    With `amsgrad`, `v` in the update is `v_max = max(v_max, v)` (Reddi et al., 2018, "On the
    Convergence of Adam and Beyond"); its state is `max_moment_2`.
    Runs `torch.optim.adam.adam` (foreach).
    """

    decoupled = False

    def __init__(self, config: Any) -> None:
        super().__init__(config.grad_clipping)
        self.config = config

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        state = {
            "step": new_step(),
            "moment_1": torch.zeros_like(param, memory_format=torch.preserve_format),
            "moment_2": torch.zeros_like(param, memory_format=torch.preserve_format),
        }
        if self.config.amsgrad:
            state["max_moment_2"] = torch.zeros_like(param, memory_format=torch.preserve_format)
        return state

    def _state(self, name: str, param: Tensor) -> dict[str, Any]:
        state = super()._state(name, param)
        if self.config.amsgrad and "max_moment_2" not in state:
            # A record saved without AMSGrad: its maximum starts at the second moment, as Burn.
            state["max_moment_2"] = state["moment_2"].clone()
        return state

    def _max_moments(self, states: list[dict]) -> list[Tensor]:
        return column(states, "max_moment_2") if self.config.amsgrad else []

    def _weight_decay(self) -> float:
        decay = self.config.weight_decay
        return decay.penalty if decay is not None else 0.0

    def _hyper_parameters(self) -> dict[str, Any]:
        """The keyword arguments of torch's `adam` kernel that come from the config."""
        return {
            "decoupled_weight_decay": self.decoupled,
            "amsgrad": self.config.amsgrad,
            "beta1": self.config.beta_1,
            "beta2": self.config.beta_2,
            "weight_decay": self._weight_decay(),
            "eps": self.config.epsilon,
            "maximize": False,
        }

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        # A tensor lr comes from a compiled step: torch's kernel then counts on the device.
        capturable = isinstance(lr, Tensor)
        adam(
            params,
            grads,
            column(states, "moment_1"),
            column(states, "moment_2"),
            self._max_moments(states),
            steps_on_device(states, params) if capturable else column(states, "step"),
            foreach=True,
            capturable=capturable,
            lr=lr,
            **self._hyper_parameters(),
        )

    def _update_unless(
        self,
        found_inf: Tensor,
        lr: float,
        params: list[Tensor],
        grads: list[Tensor],
        states: list[dict],
    ) -> None:
        """The fused kernel skips the step on the device when `found_inf` is set."""
        if not fused_supported(params, ("cpu", "cuda", "mps")):
            super()._update_unless(found_inf, lr, params, grads, states)
            return
        adam(
            params,
            grads,
            column(states, "moment_1"),
            column(states, "moment_2"),
            self._max_moments(states),
            steps_on_device(states, params),
            fused=True,
            found_inf=found_inf,
            lr=lr,
            **self._hyper_parameters(),
        )


def _check_betas(beta_1: float, beta_2: float, epsilon: float) -> None:
    for name, beta in (("beta_1", beta_1), ("beta_2", beta_2)):
        if not 0.0 <= beta < 1.0:
            raise ConfigError(f"`{name}` must be in [0, 1). Received: {name}={beta!r}.")
    if not epsilon >= 0.0:
        raise ConfigError(f"`epsilon` must be >= 0. Received: epsilon={epsilon!r}.")

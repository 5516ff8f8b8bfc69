"""AdamW (Burn: `AdamWConfig` / `AdamW`)."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.adam import Adam, _check_betas
from burnish.optim.clipping import GradientClippingConfig
from burnish.optim.kernel_state import column, fused_supported

__all__ = ["AdamW", "AdamWConfig"]


@config
class AdamWConfig:
    """Configuration of `AdamW`, with Burn's defaults (`epsilon=1e-5`, `weight_decay=1e-4`).

    Args:
        beta_1: decay of the first moment.
        beta_2: decay of the second moment.
        epsilon: added to the square root of the second moment.
        weight_decay: decoupled decay rate: `p *= 1 - lr * weight_decay` each step.
        grad_clipping: per-tensor clipping applied first.
        amsgrad: AMSGrad (Burn main): divide by the running maximum of the second moment
            (`torch.optim.AdamW(amsgrad=True)`).
        cautious_weight_decay: decay only the elements whose sign agrees with the sign of the
            first moment (Burn main; Chen et al., 2025, "Cautious Weight Decay",
            arXiv:2510.12402).
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-5
    weight_decay: float = 1e-4
    grad_clipping: GradientClippingConfig | None = None
    amsgrad: bool = False
    cautious_weight_decay: bool = False

    def __post_init__(self) -> None:
        _check_betas(self.beta_1, self.beta_2, self.epsilon)
        if not self.weight_decay >= 0.0:
            raise ConfigError(
                f"`weight_decay` must be >= 0. Received: weight_decay={self.weight_decay!r}."
            )

    def init(self) -> AdamW:
        """Build the optimizer."""
        return AdamW(self)


class AdamW(Adam):
    """AdamW: Loshchilov & Hutter, 2019, "Decoupled Weight Decay Regularization".

    Per step: `p *= 1 - lr * weight_decay`, then the Adam update of `Adam`.
    Runs `torch.optim.adam.adam(..., decoupled_weight_decay=True)`.

    With `cautious_weight_decay`, as Burn: the decay `lr * weight_decay * p` is applied only
    where `p >= 0` and the updated first moment `m >= 0` agree (both true or both false),
    then the Adam update: `p -= mask * lr * wd * p + lr * u`. The decay is taken before the
    kernel and masked after it, in a few multi-tensor operations.
    """

    decoupled = True

    def _cautious(self) -> bool:
        return bool(self.config.cautious_weight_decay and self.config.weight_decay > 0.0)

    def _weight_decay(self) -> float:
        # The cautious decay is applied around the kernel, not by it.
        return 0.0 if self._cautious() else self.config.weight_decay

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        if not self._cautious():
            super()._update(lr, params, grads, states)
            return
        decay = torch._foreach_mul(params, lr * self.config.weight_decay)
        super()._update(lr, params, grads, states)
        _apply_cautious_decay(params, decay, column(states, "moment_1"))

    def _update_unless(
        self,
        found_inf: Tensor,
        lr: float,
        params: list[Tensor],
        grads: list[Tensor],
        states: list[dict],
    ) -> None:
        """The fused kernel skips the step on the device; the cautious decay is zeroed too."""
        if not self._cautious() or not fused_supported(params, ("cpu", "cuda", "mps")):
            super()._update_unless(found_inf, lr, params, grads, states)
            return
        decay: Any = torch._foreach_mul(params, lr * self.config.weight_decay)
        super()._update_unless(found_inf, lr, params, grads, states)
        torch._foreach_mul_(decay, 1.0 - found_inf)
        _apply_cautious_decay(params, decay, column(states, "moment_1"))


def _apply_cautious_decay(params: list[Tensor], decay: Any, moments: list[Tensor]) -> None:
    """`p -= decay` where `decay >= 0` and `moment >= 0` agree (decay has the sign of p)."""
    differ = _non_negative(decay)
    torch._foreach_sub_(differ, _non_negative(moments))  # -1 or 1 where the signs differ
    torch._foreach_mul_(differ, differ)
    torch._foreach_addcmul_(decay, decay, differ, value=-1.0)  # zero where they differ
    torch._foreach_sub_(params, decay)


def _non_negative(tensors: Any) -> Any:
    """1 where an element is >= 0 (-0.0 included, as Burn's `greater_equal_scalar(0)`), else 0."""
    signs = torch._foreach_sign(tensors)
    torch._foreach_add_(signs, 1.0)
    torch._foreach_clamp_max_(signs, 1.0)
    return signs

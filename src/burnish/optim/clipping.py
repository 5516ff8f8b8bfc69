"""Per-tensor gradient clipping (Burn: `GradientClippingConfig`)."""

from __future__ import annotations

from typing import Literal, cast

import torch
from torch import Tensor

from burnish.config import config
from burnish.errors import ConfigError

__all__ = ["GradientClippingConfig"]

# Added to the norm before dividing, as Burn 0.19 and `torch.nn.utils.clip_grad_norm_` do.
_NORM_EPSILON = 1e-6


@config
class GradientClippingConfig:
    """Clip each parameter's gradient on its own, by value or by L2 norm (as Burn does).

    Build it with `GradientClippingConfig.value(threshold)` (every element clamped to
    `[-threshold, threshold]`) or `GradientClippingConfig.norm(max_norm)` (each gradient
    tensor scaled by `min(1, max_norm / (||g|| + 1e-6))`). Unlike
    `torch.nn.utils.clip_grad_norm_`, the norm is per tensor, not over all parameters.
    """

    mode: Literal["value", "norm"]
    threshold: float

    def __post_init__(self) -> None:
        if self.mode not in ("value", "norm"):
            raise ConfigError(
                f"`mode` must be 'value' or 'norm'. Received: mode={self.mode!r}. Use "
                "GradientClippingConfig.value(x) or GradientClippingConfig.norm(x)."
            )
        if not self.threshold >= 0:
            raise ConfigError(
                f"The clipping threshold must be >= 0. Received: threshold={self.threshold!r}."
            )

    @classmethod
    def value(cls, threshold: float) -> GradientClippingConfig:
        """Clamp every gradient element to `[-threshold, threshold]`."""
        return cls("value", float(threshold))

    @classmethod
    def norm(cls, max_norm: float) -> GradientClippingConfig:
        """Scale each gradient tensor down to an L2 norm of at most `max_norm`."""
        return cls("norm", float(max_norm))

    def clip(self, grads: list[Tensor]) -> list[Tensor]:
        """Clipped copies of `grads` (one fused foreach call per kind of operation)."""
        # The foreach ops return tuples; the optimizers only pass them on to torch's foreach
        # kernels, which take tuples and lists alike.
        if not grads:
            return grads
        if self.mode == "value":
            clipped = torch._foreach_clamp_min(grads, -self.threshold)
            torch._foreach_clamp_max_(clipped, self.threshold)
            return cast("list[Tensor]", clipped)
        norms = torch._foreach_norm(grads)
        torch._foreach_add_(norms, _NORM_EPSILON)
        torch._foreach_reciprocal_(norms)
        torch._foreach_mul_(norms, self.threshold)
        torch._foreach_clamp_max_(norms, 1.0)
        return cast("list[Tensor]", torch._foreach_mul(grads, norms))

"""Gradient clipping (Burn: `GradientClippingConfig`), per tensor as Burn, or by global norm."""

from __future__ import annotations

from typing import Literal, cast

import torch
from torch import Tensor

from burnish.config import config
from burnish.errors import ConfigError

__all__ = ["GradientClippingConfig"]

# Added to the norm before dividing, as Burn 0.19 and `torch.nn.utils.clip_grad_norm_` do.
_NORM_EPSILON = 1e-6
_MODES = ("value", "norm", "global_norm")


@config
class GradientClippingConfig:
    """Clip gradients by value, by each tensor's L2 norm (as Burn), or by their global L2 norm.

    Build it with one of:

    * `GradientClippingConfig.value(threshold)`: every element clamped to
      `[-threshold, threshold]` (Burn's `Value`).
    * `GradientClippingConfig.norm(max_norm)`: each gradient tensor on its own scaled by
      `min(1, max_norm / (||g|| + 1e-6))` (Burn's `Norm`).
    * `GradientClippingConfig.global_norm(max_norm)`: every gradient of the step scaled by
      `min(1, max_norm / (||(g_1, ..., g_n)|| + 1e-6))`, the norm of all of them as one vector:
      `torch.nn.utils.clip_grad_norm_`. The norm is taken over the gradients given to one
      `optim.step` call, on the device (no host sync).
    """

    mode: Literal["value", "norm", "global_norm"]
    threshold: float

    def __post_init__(self) -> None:
        if self.mode not in _MODES:
            raise ConfigError(
                "`mode` must be 'value', 'norm' or 'global_norm'. Received: "
                f"mode={self.mode!r}. Use GradientClippingConfig.value(x), .norm(x) or "
                ".global_norm(x)."
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
        """Scale each gradient tensor down to an L2 norm of at most `max_norm` (as Burn)."""
        return cls("norm", float(max_norm))

    @classmethod
    def global_norm(cls, max_norm: float) -> GradientClippingConfig:
        """Scale all gradients of a step together to a global L2 norm of at most `max_norm`.

        The same as `torch.nn.utils.clip_grad_norm_(params, max_norm)` before the step.

        Example:
            >>> from burnish.optim import AdamWConfig, GradientClippingConfig
            >>> optim = AdamWConfig(grad_clipping=GradientClippingConfig.global_norm(1.0)).init()
        """
        return cls("global_norm", float(max_norm))

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
        if self.mode == "global_norm":
            return _scale_to_global_norm(grads, norms, self.threshold)
        torch._foreach_add_(norms, _NORM_EPSILON)
        torch._foreach_reciprocal_(norms)
        torch._foreach_mul_(norms, self.threshold)
        torch._foreach_clamp_max_(norms, 1.0)
        return cast("list[Tensor]", torch._foreach_mul(grads, norms))


def _scale_to_global_norm(
    grads: list[Tensor], norms: tuple[Tensor, ...], max_norm: float
) -> list[Tensor]:
    """`grads * min(1, max_norm / (total + 1e-6))`, `total` the norm of the tensors' `norms`.

    As `torch.nn.utils.clip_grad_norm_`: the total is computed on the first gradient's device
    and the factor is applied without reading it back (no `if total > max_norm` on the host).
    """
    try:
        total = torch.linalg.vector_norm(torch.stack(norms))
        coefficient = (max_norm / (total + _NORM_EPSILON)).clamp_(max=1.0)
        return cast("list[Tensor]", torch._foreach_mul(grads, coefficient))
    except RuntimeError:
        if len({grad.device for grad in grads}) == 1:
            raise
        return _scale_on_many_devices(grads, norms, max_norm)


def _scale_on_many_devices(
    grads: list[Tensor], norms: tuple[Tensor, ...], max_norm: float
) -> list[Tensor]:
    """The global-norm scaling of gradients spread over several devices (model parallel)."""
    first = grads[0].device
    total = torch.linalg.vector_norm(torch.stack([norm.to(first) for norm in norms]))
    coefficient = (max_norm / (total + _NORM_EPSILON)).clamp_(max=1.0)
    per_device = {grad.device: coefficient.to(grad.device) for grad in grads}
    return [grad * per_device[grad.device] for grad in grads]

"""L2 weight decay added to the gradient (Burn: `WeightDecayConfig`)."""

from __future__ import annotations

from burnish.config import config

__all__ = ["WeightDecayConfig"]


@config
class WeightDecayConfig:
    """L2 penalty: the gradient becomes `grad + penalty * param` before the update.

    Args:
        penalty: the L2 coefficient (Burn has no default; PyTorch calls it `weight_decay`).
    """

    penalty: float

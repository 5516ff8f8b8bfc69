"""`RecomputeOptions`: which blocks recompute their activations in the backward pass."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from burnish.train.settings.fields import OptionGroup

if TYPE_CHECKING:
    from burnish.gradient_checkpointing import BlockSelector

__all__ = ["RecomputeOptions"]


@dataclasses.dataclass(frozen=True)
class RecomputeOptions(OptionGroup):
    """Which blocks recompute their activations in the backward pass (Burn's
    `gradient_checkpointing`, not a training checkpoint).

    Attributes:
        enabled: run the model's blocks under `torch.utils.checkpoint` during `fit`.
        blocks: which blocks (see `burnish.checkpoint_blocks`).
    """

    enabled: bool = False
    blocks: BlockSelector = None

"""`PrecisionOptions`: the number types and algorithms the steps compute with."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from burnish.train.settings.fields import OptionGroup

if TYPE_CHECKING:
    import torch

__all__ = ["PrecisionOptions"]


@dataclasses.dataclass(frozen=True)
class PrecisionOptions(OptionGroup):
    """The number types and algorithms the steps compute with.

    Attributes:
        autocast: the half type the steps run in under autocast (`mixed_precision`), None:
            float32.
        deterministic: use torch's deterministic algorithms during `fit`.
    """

    autocast: torch.dtype | None = None
    deterministic: bool = False

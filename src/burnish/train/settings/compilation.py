"""`CompilationOptions`: what `torch.compile` compiles during `fit`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from burnish.train.settings.fields import OptionGroup

__all__ = ["CompilationOptions"]


@dataclasses.dataclass(frozen=True)
class CompilationOptions(OptionGroup):
    """What `torch.compile` compiles during `fit` (`compile`).

    Attributes:
        kwargs: the keyword arguments of `torch.compile`, None: eager.
        whole_step: whether they apply to the whole train step (forward, backward and
            optimizer step as one graph) instead of the forward.
    """

    kwargs: Mapping[str, Any] | None = None
    whole_step: bool = False

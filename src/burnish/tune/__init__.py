"""Tuning before training: the learning-rate range test (`lr_find`, `LrFinderResult`).

`learner.lr_find(dataloader_train)` runs it on a learner's model and optimizer; `lr_find(model,
optim, dataloader)` on any model with a `train_step`. `LrFinderResult` (plain Python) is what
`burnish report` reads from `lr_finder.json`; `lr_find` (torch) is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from burnish.tune.lr_finder_result import LR_FINDER_FILE, LrFinderResult

if TYPE_CHECKING:
    from burnish.tune.lr_finder import exponential_lrs, lr_find

__all__ = ["LR_FINDER_FILE", "LrFinderResult", "exponential_lrs", "lr_find"]

_LAZY = {"lr_find": "burnish.tune.lr_finder", "exponential_lrs": "burnish.tune.lr_finder"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'burnish.tune' has no attribute {name!r}")

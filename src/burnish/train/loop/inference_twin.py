"""The inference twin `fit` returns (Burn: `model.valid()`), and the model it came from.

`fit` hands back `valid(model)`: eval mode, no autograd, the trained parameters' storage. The
twin remembers its model, so that a learner given the twin (to continue training) and
`TrainingResult.best_model` (to load a checkpoint into a copy) reach the trained model itself.
"""

from __future__ import annotations

import weakref
from typing import TypeVar

from torch import nn

from burnish.module import valid

__all__ = ["inference_model", "training_model"]

M = TypeVar("M", bound=nn.Module)

# The inference twin `fit` returned -> the model it trained, so that a learner given the twin
# (to continue training) trains the model itself: the twin's parameters take no gradients.
_TRAINED: weakref.WeakKeyDictionary[nn.Module, nn.Module] = weakref.WeakKeyDictionary()


def inference_model(model: M, sharded: bool = False) -> M:
    """What `fit` hands back for `model`: its inference twin (Burn: `model.valid()`).

    The twin is remembered, so that `training_model(twin)` gives `model` back. A model
    sharded by FSDP cannot have a twin (its hooks gather its own parameters): it is put in
    eval mode and returned itself.
    """
    if sharded:
        return model.eval()
    twin = valid(model)
    _TRAINED[twin] = model
    return twin


def training_model(model: M) -> M:
    """The model `fit` trained if `model` is the inference twin it returned, else `model`."""
    trained = _TRAINED.get(model)
    return model if trained is None else trained  # type: ignore[return-value]

"""Burn's `ParamId` for PyTorch tensors: a u64 that follows a parameter through files.

Burnpack stores each tensor's `param_id`. burnish gives a module's tensor one the first time it
is saved (random, as Burn's `ParamId::new()`), keeps it on the tensor, and gives the id read
from a file to the tensor it is loaded into, so saving again writes the same ids.
"""

from __future__ import annotations

import secrets

import torch

__all__ = ["param_id", "set_param_id"]

_ATTRIBUTE = "_burnish_param_id"


def param_id(tensor: torch.Tensor) -> int:
    """The tensor's id, created (a random u64) on first use."""
    value = getattr(tensor, _ATTRIBUTE, None)
    if value is None:
        value = secrets.randbits(64)
        setattr(tensor, _ATTRIBUTE, value)
    return int(value)


def set_param_id(tensor: torch.Tensor, value: int | None) -> None:
    """Give `tensor` the id `value` (None: keep its own)."""
    if value is not None:
        setattr(tensor, _ATTRIBUTE, int(value))

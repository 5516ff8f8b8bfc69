"""Devices and seeding (Burn's `Backend::seed` and `Device`)."""

from __future__ import annotations

import random

import numpy as np
import torch

__all__ = ["device", "seed"]


def seed(value: int) -> None:
    """Seed Python's `random`, NumPy's global RNG and torch's RNGs on every device.

    Args:
        value: a non-negative integer below 2**32.

    Raises:
        ValueError: if `value` is negative, too large, or not an integer.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise ValueError(f"`seed` must be an integer in [0, 2**32). Received: seed={value!r}.")
    random.seed(value)
    np.random.seed(value)
    torch.manual_seed(value)  # also seeds every CUDA device


def device(spec: str | torch.device = "cpu") -> torch.device:
    """Parse a device: `"cpu"`, `"cuda"`, `"cuda:1"`, `"mps"`, or a `torch.device`.

    Raises:
        ValueError: if the string is not a device torch knows.
    """
    if isinstance(spec, torch.device):
        return spec
    try:
        return torch.device(spec)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"Unknown device {spec!r}. Use 'cpu', 'cuda', 'cuda:<index>' or 'mps'."
        ) from error

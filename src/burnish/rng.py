"""The generators' states: taken and put back on the host, without a device sync.

Python's `random`, NumPy's global generator, torch's CPU generator and, once CUDA is
initialised, every CUDA device's. What draws from them in between (dropout, shuffles, a
validation inside an epoch, a learning-rate sweep) leaves no trace once they are put back.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

__all__ = ["RngState", "preserved_rng", "restore_rng", "rng_state"]

RngState = tuple[Any, Any, torch.Tensor, Any]


def rng_state() -> RngState:
    """Every generator's state, as host-side values (no device sync)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    return random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda


def restore_rng(state: RngState) -> None:
    """Put the generators back as `rng_state()` found them."""
    python, numpy, cpu, cuda = state
    random.setstate(python)
    np.random.set_state(numpy)
    torch.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


@contextlib.contextmanager
def preserved_rng() -> Iterator[None]:
    """The generators are put back as they were on exit (an exception included)."""
    state = rng_state()
    try:
        yield
    finally:
        restore_rng(state)

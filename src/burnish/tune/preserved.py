"""Put a model, its optimizer and the generators back exactly as they were before a trial.

The range test trains for real; afterwards nothing it did may remain: not one bit of a
parameter or buffer, no optimizer state (Adam's moments, step counters), no mode change, no
random number drawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from burnish.rng import preserved_rng

__all__ = ["preserved_training"]


@contextlib.contextmanager
def preserved_training(model: nn.Module, optim: Any) -> Iterator[None]:
    """On exit (an exception included), `model`'s parameters and buffers hold their values
    again (copied back into the same tensors, so references to them stay valid), each
    submodule its train/eval mode, `optim` its record, and the generators their states.

    The copies are made on the tensors' own devices (no host sync): the trial needs the memory
    of one more copy of the weights and of the optimizer state.
    """
    tensors = _tensors(model)
    with torch.no_grad():
        saved = [tensor.detach().clone() for tensor in tensors]
    modes = [(module, module.training) for module in model.modules()]
    record = optim.to_record()  # a snapshot: its tensors are copies
    with preserved_rng():
        try:
            yield
        finally:
            with torch.no_grad():
                for tensor, value in zip(tensors, saved):
                    tensor.copy_(value)
            for module, training in modes:
                module.training = training
            optim.load_record(record)


def _tensors(model: nn.Module) -> list[torch.Tensor]:
    """Every parameter and buffer, each once (non-persistent buffers too)."""
    return [*model.parameters(), *(b for b in model.buffers() if b is not None)]

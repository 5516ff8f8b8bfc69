"""The opt-in `torch.compile` path of the learner (`LearnerBuilder.compile`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["compiled_forward"]


@contextlib.contextmanager
def compiled_forward(modules: list[nn.Module], options: Mapping[str, Any] | None) -> Iterator[None]:
    """Compile each module's `forward` for the duration of the block, then restore it.

    `train_step` and `valid_step` call `self.forward(...)` directly, so the compiled function is
    set as an instance attribute shadowing the method (`nn.Module.compile` would only compile
    `__call__`). Parameters, state dicts and records are unaffected.

    Args:
        modules: the training model and its inference twin (each compiled separately).
        options: keyword arguments of `torch.compile`, or None to leave the modules alone.
    """
    if options is None:
        yield
        return
    for module in modules:
        module.__dict__.pop("forward", None)
        module.forward = torch.compile(module.forward, **options)
    try:
        yield
    finally:
        for module in modules:
            module.__dict__.pop("forward", None)

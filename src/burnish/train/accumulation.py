"""Gradient accumulation inside the learner (`LearnerBuilder.grads_accumulation(n)`)."""

from __future__ import annotations

from typing import Any

from torch import nn

from burnish.optim import GradientsAccumulator, GradientsParams

__all__ = ["Accumulation"]


class Accumulation:
    """Sums the gradients of `every` iterations and hands them out once, for one step.

    Args:
        every: iterations per optimizer step; None steps every iteration.
    """

    def __init__(self, every: int | None) -> None:
        self.every = every
        self.accumulator = GradientsAccumulator()
        self.count = 0

    def add(self, model: nn.Module, grads: GradientsParams) -> GradientsParams | None:
        """The gradients to step with now, or None while still accumulating."""
        if self.every is None:
            return grads
        self.accumulator.accumulate(model, grads)
        self.count += 1
        if self.count < self.every:
            return None
        self.count = 0
        return self.accumulator.grads()

    def to_record(self) -> dict[str, Any]:
        """The running sum (None between steps) and how many iterations it holds."""
        running = self.accumulator.to_record() if self.count else None
        return {"accumulator": running, "accumulated": self.count}

    def load_record(self, record: dict[str, Any], model: nn.Module) -> None:
        """Continue a `to_record()` sum of `model`'s gradients."""
        self.count = record["accumulated"]
        if record["accumulator"] is not None:
            self.accumulator.load_record(record["accumulator"], model)

"""Gradient accumulation inside the learner (`LearnerBuilder.grads_accumulation(n)`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from torch import nn

from burnish.optim import GradientsAccumulator, GradientsParams

if TYPE_CHECKING:
    from burnish.lr_scheduler import LrScheduler

__all__ = ["LR_STEPS", "Accumulation", "LrStep"]

LrStep = Literal["iteration", "optimizer_step"]
LR_STEPS: tuple[LrStep, ...] = ("iteration", "optimizer_step")


class Accumulation:
    """Sums the gradients of `every` iterations and hands them out once, for one step.

    Args:
        every: iterations per optimizer step; None steps every iteration.
        lr_step: when the learning-rate scheduler advances: once per `"iteration"` (Burn's
            learner), or once per `"optimizer_step"` (at the first iteration of each group of
            `every`, whose summed gradients are then applied with that rate).
    """

    def __init__(self, every: int | None, lr_step: LrStep = "iteration") -> None:
        self.every = every
        self.lr_step = lr_step
        self.accumulator = GradientsAccumulator()
        self.count = 0

    def lr(self, scheduler: LrScheduler, last: float | None) -> float:
        """The learning rate of this iteration, stepping `scheduler` when one is due.

        `last` is the previous iteration's rate (restored by a resume): inside a group of
        accumulated iterations, per optimizer step, it is kept.
        """
        if self.lr_step == "iteration" or self.count == 0 or last is None:
            return scheduler.step()
        return last

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

    @property
    def stepped(self) -> bool:
        """Whether the last iteration ended with an optimizer step (no group left open)."""
        return self.count == 0

    def to_record(self) -> dict[str, Any]:
        """The running sum (None between steps) and how many iterations it holds."""
        running = self.accumulator.to_record() if self.count else None
        return {"accumulator": running, "accumulated": self.count}

    def load_record(self, record: dict[str, Any], model: nn.Module) -> None:
        """Continue a `to_record()` sum of `model`'s gradients."""
        self.count = record["accumulated"]
        if record["accumulator"] is not None:
            self.accumulator.load_record(record["accumulator"], model)

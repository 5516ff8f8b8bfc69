"""Shared bits of the renderer tests: a fake clock and a learner-like driver."""

from __future__ import annotations

from burnish.train.renderer import MetricsRenderer, RenderSnapshot, TrainingProgress


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def drive(
    renderer: MetricsRenderer,
    split: str,
    epoch: int,
    num_epochs: int,
    num_iterations: int,
    batch_size: int = 10,
    clock: FakeClock | None = None,
    step_s: float = 0.0,
) -> int:
    """Run one epoch of `split` as the learner does; returns how many times `due()` was True."""
    renders = 0
    for iteration in range(1, num_iterations + 1):
        if clock is not None:
            clock.now += step_s
        if renderer.due():
            renders += 1
            progress = TrainingProgress(
                epoch, num_epochs, iteration, iteration * batch_size, num_iterations * batch_size
            )
            loss = 1.0 / iteration
            renderer.render(RenderSnapshot(split, progress, {"Loss": (loss, 2 * loss)}))
    renderer.end_epoch(split, epoch, {"Loss": 0.5, "Accuracy": 91.25})
    return renders

"""A renderer that shows nothing: for ranks other than 0 and for runs without a display."""

from __future__ import annotations

from burnish.train.interrupter import Interrupter
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot
from burnish.train.split import Split

__all__ = ["NullRenderer"]


class NullRenderer(MetricsRenderer):
    """Draws nothing and is never due, so the learner never reads metrics back for it."""

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Nothing to start."""

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Nothing to start."""

    def due(self) -> bool:
        """Never due."""
        return False

    def render(self, snapshot: RenderSnapshot) -> None:
        """Nothing to draw."""

    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to release."""

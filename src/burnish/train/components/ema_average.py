"""`with_ema` as a component of the loop: the average updated after every optimizer step,
validated instead of (or beside) the model, recorded in a checkpoint file of its own (`ema`),
and returned as `result.ema`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from burnish.module import valid
from burnish.train.components.component import Component
from burnish.train.components.ema import EmaSettings, ModelEma
from burnish.train.components.ema_validation import EmaValidation

if TYPE_CHECKING:
    from torch import nn

    from burnish.optim import GradScaler
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.result import TrainingResult

__all__ = ["EmaAverage"]


class EmaAverage(Component):
    """The moving average of the trained model's weights (ema.py), in the loop.

    Args:
        model: the model being trained, on its device (the average is a copy of it).
        settings: the decay, the cadence and what validation runs on.
    """

    key: ClassVar[str | None] = "ema"
    file: ClassVar[bool] = True

    def __init__(self, model: nn.Module, settings: EmaSettings) -> None:
        self.settings = settings
        self.ema = ModelEma(model, settings)
        self.run: LoopView | None = None

    def bind(self, run: LoopView) -> None:
        self.run = run

    def after_optimizer_step(self, model: nn.Module, scaler: GradScaler | None) -> None:
        self.ema.update(model)

    def valid_model(self, model: nn.Module) -> Any:
        """The average's inference twin (and the model's too, with `validate="both"`)."""
        if self.settings.validate == "model":
            return None
        raw = valid(model) if self.settings.validate == "both" else None
        return EmaValidation(valid(self.ema.module), raw)

    def result(self, result: TrainingResult) -> None:
        result.ema = self.ema.module

    def to_record(self) -> dict[str, Any]:
        return self.ema.to_record()

    def load_record(self, record: Any, changed: list[str]) -> None:
        assert self.run is not None
        self.ema.load_record(record, self.run.state.model)

"""One eager training iteration after the learning rate is known: `train_step` (under autocast
with mixed precision), gradient accumulation, the gradients averaged over the ranks, the
optimizer step (through the loss scaler, or as the components wrap it: the non-finite guard),
and the components told of it (the EMA update).

`compile(step=True)` replaces all of it with one graph (compile.py `CompiledTrainStep`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from burnish.optim import GradientsParams
from burnish.train.loop.step_check import check_train_output

if TYPE_CHECKING:
    from torch import nn

    from burnish.optim import Optimizer
    from burnish.train.components.dispatch import Components
    from burnish.train.loop.precision import MixedPrecision
    from burnish.train.loop.state import TrainingState
    from burnish.train.output import TrainOutput
    from burnish.train.parallel.grad_sync import GradientSync
    from burnish.train.step import TrainStep

__all__ = ["EagerTrainStep"]


class EagerTrainStep:
    """Runs one training iteration of `state.model` and updates `state.model` in place.

    Args:
        state: the run's state (model, optimizer, accumulation, loss scaler).
        precision: autocast for `train_step`, None for float32.
        grad_sync: averages the gradients over the ranks, None in one process.
        components: the loop's components: they may wrap the optimizer step (the non-finite
            guard) and are told of each one taken (the average).
    """

    def __init__(
        self,
        state: TrainingState,
        precision: MixedPrecision | None,
        grad_sync: GradientSync | None,
        components: Components,
    ) -> None:
        self.state = state
        self.precision = precision
        self.grad_sync = grad_sync
        self.components = components
        self.optimizer_step = components.guard_step(_step)

    def __call__(self, batch: Any, lr: float, first: bool = False) -> Any:
        """Train on `batch` at `lr`; returns the output's item for the metrics. `first`: the
        epoch's first iteration, whose output is checked (a `TrainOutput`, `bn.backward`'s
        gradients)."""
        output = self._train_step(batch)
        if first:
            check_train_output(output, self.state.model)
        self._optimize(output, lr)
        return output.item

    def _train_step(self, batch: Any) -> TrainOutput:
        model: TrainStep = self.state.model  # type: ignore[assignment]  # checked at fit
        if self.precision is None:
            return model.train_step(batch)
        with self.precision.train():
            return model.train_step(batch)

    def _optimize(self, output: TrainOutput, lr: float) -> None:
        state = self.state
        grads = output.grads
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, state.model)
        ready = state.accumulation.add(state.model, grads)
        if ready is None:
            return
        if self.grad_sync is not None:  # only optimizer steps communicate
            ready = self.grad_sync.average(ready)
        state.model = self._step(lr, ready)

    def _step(self, lr: float, grads: GradientsParams) -> nn.Module:
        """The optimizer step, then the components told (the average updated). With a loss
        scaler, unscaled first and skipped on inf/NaN; without, as the components wrapped it
        (skipped so with on_non_finite("skip"/"stop"))."""
        state = self.state
        if state.scaler is None:
            model = self.optimizer_step(state.optim, lr, state.model, grads)
            self.components.after_optimizer_step(model, None)
            return model
        model = state.scaler.step(state.optim, lr, state.model, grads)
        self.components.after_optimizer_step(model, state.scaler)  # before the scale's update
        state.scaler.update()
        return model


def _step(optim: Optimizer, lr: float, model: nn.Module, grads: GradientsParams) -> nn.Module:
    return optim.step(lr, model, grads)

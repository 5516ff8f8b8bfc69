"""The `Learner`'s methods for a loop of your own (Burn main's `Learner` methods, base.rs).

A custom training loop, as Burn's `custom-learning-strategy` example writes it:

    learner.fork(device)
    for batch in dataloader_train:
        learner.lr_step()                      # the rate is 0.0 until the first lr_step
        output = learner.train_step(batch)     # the model's train_step: forward and backward
        learner.optimizer_step(output.grads)   # at learner.lr_current()
    model_valid = learner.model().valid()

Unlike Burn's `model()` (a clone of immutable tensors), `model()` returns the model itself:
optimizer steps update its parameters in place, so a model taken before a step sees the step
(`model.fork(device)` makes a copy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from torch import nn

from burnish.module import fork, load_record
from burnish.optim.multi_grads import MultiGradientsParams
from burnish.optim.params import GradientsParams

if TYPE_CHECKING:
    import torch

    from burnish.lr_scheduler import LrScheduler
    from burnish.optim import Optimizer
    from burnish.train.output import TrainOutput

__all__ = ["LearnerSteps"]


class LearnerSteps:
    """Burn's `Learner` methods: the steps of a training loop over the learner's parts.

    The `Learner` has them; they read and replace its model, optimizer and scheduler.
    """

    _model: nn.Module
    optim: Optimizer
    lr_scheduler: LrScheduler
    _lr_current: float = 0.0  # Burn: `lr_module: 0.0.into()` until the first `lr_step`

    def fork(self, device: torch.device | str) -> None:
        """Move the learner's model to `device` (Burn: `learner.fork(&device)`).

        The model becomes a copy on `device` that keeps its parameters' ids, so the optimizer
        goes on with its state (moved to the device at the next step).
        """
        self._model = fork(self._model, device)

    def model(self) -> nn.Module:
        """The current model (Burn: `learner.model()`), in training mode.

        It is the learner's model itself, not a copy: later optimizer steps update it in
        place. `learner.model().valid()` (or `bn.valid(...)`) is its inference twin.
        """
        return self._model

    def lr_current(self) -> float:
        """The learning rate of the last `lr_step` (0.0 before the first, as Burn's).

        A float, or a `ModuleLearningRate` (a float too) for a `ModuleLrScheduler`.
        """
        return self._lr_current

    def lr_step(self) -> None:
        """Step the learning-rate scheduler; its rate becomes `lr_current()`."""
        self._lr_current = self.lr_scheduler.step()

    def train_step(self, item: Any) -> TrainOutput:
        """Run the model's `train_step(item)`: forward and backward (Burn: `TrainStep::step`).

        Args:
            item: a batch, as the data loader gives it.

        Returns:
            The model's `TrainOutput`: its gradients and the item for the metrics.

        Raises:
            TypeError: if the model has no `train_step` method.
        """
        step = getattr(self._model, "train_step", None)
        if not callable(step):
            raise TypeError(
                f"`learner.train_step(item)` runs the model's `train_step`, and "
                f"{type(self._model).__name__} has none. Add `def train_step(self, batch) -> "
                "TrainOutput` to the model (return `TrainOutput(self, bn.backward(loss), item)`)."
            )
        return step(item)

    def optimizer_step(self, grads: GradientsParams | Any) -> None:
        """Step the model with `grads` at `lr_current()` (Burn: `learner.optimizer_step`).

        Args:
            grads: a `GradientsParams`, or what `bn.backward(loss)` returned (as
                `TrainOutput.grads` holds it): the gradients of the model's parameters.
        """
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, self._model)
        self._model = self.optim.step(self._lr_current, self._model, grads)

    def optimizer_step_multi(self, grads: MultiGradientsParams) -> None:
        """Step the model with gradients from several sources, summed per parameter
        (Burn: `learner.optimizer_step_multi`).

        Raises:
            TypeError: if `grads` is not a `MultiGradientsParams`.
        """
        if not isinstance(grads, MultiGradientsParams):
            raise TypeError(
                "`optimizer_step_multi` takes a MultiGradientsParams (its `grads` a list of "
                f"`(GradientsParams, device)`). Received: {type(grads).__name__}. For one "
                "GradientsParams, call `optimizer_step(grads)`."
            )
        summed = grads.into_params(self._model)
        self._model = self.optim.step(self._lr_current, self._model, summed)

    def load_model(self, record: Any) -> None:
        """Load a model record (`model.into_record()`, a recorder's `load`) into the model."""
        self._model = load_record(self._model, record)

    def load_optim(self, record: dict[str, Any]) -> None:
        """Load an optimizer record (`optim.to_record()`) into the learner's optimizer."""
        self.optim = self.optim.load_record(record)

    def load_scheduler(self, record: dict[str, Any]) -> None:
        """Load a scheduler record (`scheduler.to_record()`) into the learner's scheduler."""
        self.lr_scheduler = self.lr_scheduler.load_record(record)

"""What a model implements to be trained by the Learner and evaluated by the Evaluator (Burn's
`TrainStep`, `ValidStep` and Burn main's name for the latter, `InferenceStep`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from burnish.train.output import TrainOutput

__all__ = ["InferenceStep", "TestStep", "TrainStep", "ValidStep"]


@runtime_checkable
class TrainStep(Protocol):
    """A model that can run one training step (Burn: `TrainStep::step`).

    `train_step(batch)` runs the forward pass, calls `bn.backward(loss)` and returns
    `TrainOutput(self, grads, item)`; the learner then steps the optimizer with those gradients.
    """

    def train_step(self, batch: Any) -> TrainOutput[Any]:
        """Run the forward and backward passes on `batch`; return its gradients and the item."""


@runtime_checkable
class ValidStep(Protocol):
    """A model that can run one validation step (Burn: `ValidStep::step`).

    The learner calls `valid_step(batch)` on `model.valid()`: eval mode, no autograd.
    """

    def valid_step(self, batch: Any) -> Any:
        """Run the forward pass on `batch` (no autograd); return the item the metrics read."""


InferenceStep = ValidStep
"""Burn main's name for `ValidStep` (`InferenceStep::step`): the step validation and the
`Evaluator` run. A model implements it as `valid_step(batch)`."""


@runtime_checkable
class TestStep(Protocol):
    """A model with a step of its own for the test split: the `Evaluator` runs `test_step`
    when the model has one, else `valid_step`."""

    def test_step(self, batch: Any) -> Any:
        """Run the forward pass on `batch` (no autograd); return the item the metrics read."""

"""What a model implements to be trained by the Learner and evaluated by the Evaluator (Burn's
`TrainStep`, `ValidStep` and Burn main's name for the latter, `InferenceStep`).

A model implements them as methods (`train_step`, `valid_step`); Burn's static-call form works
too: `TrainStep.step(model, item)` runs `model.train_step(item)` and
`InferenceStep.step(model_valid, item)` (or `ValidStep.step`) runs `model_valid.valid_step(item)`,
as Burn's `custom-learning-strategy` example writes `InferenceStep::step(&model_valid, item)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, _ProtocolMeta, runtime_checkable

if TYPE_CHECKING:
    from burnish.train.output import TrainOutput

__all__ = ["InferenceStep", "TestStep", "TrainStep", "ValidStep"]


class _StepMeta(_ProtocolMeta):
    """Gives a step protocol Burn's `Trait::step(&model, item)`: a method of the protocol
    class, not a member a model must have (on the metaclass, so `isinstance(model,
    TrainStep)` still asks for `train_step` alone)."""

    def step(cls, model: Any, item: Any) -> Any:
        """Run `model`'s step of this protocol on `item` (Burn: `TrainStep::step(&model,
        item)`, `InferenceStep::step(&model_valid, item)`).

        Raises:
            TypeError: if `model` has no such method.
        """
        name = next(_STEP_METHODS[c] for c in cls.__mro__ if c in _STEP_METHODS)
        method = getattr(model, name, None)
        if not callable(method):
            raise TypeError(
                f"`{cls.__name__}.step(model, item)` calls `model.{name}(item)`; "
                f"{type(model).__name__} has no `{name}` method. Define "
                f"`def {name}(self, batch)` on the model."
            )
        return method(item)


@runtime_checkable
class TrainStep(Protocol, metaclass=_StepMeta):
    """A model that can run one training step (Burn: `TrainStep::step`).

    `train_step(batch)` runs the forward pass, calls `bn.backward(loss)` and returns
    `TrainOutput(self, grads, item)`; the learner then steps the optimizer with those gradients.
    """

    def train_step(self, batch: Any) -> TrainOutput[Any]:
        """Run the forward and backward passes on `batch`; return its gradients and the item."""


@runtime_checkable
class ValidStep(Protocol, metaclass=_StepMeta):
    """A model that can run one validation step (Burn: `ValidStep::step`).

    The learner calls `valid_step(batch)` on `model.valid()`: eval mode, no autograd.
    """

    def valid_step(self, batch: Any) -> Any:
        """Run the forward pass on `batch` (no autograd); return the item the metrics read."""


# The method each protocol's `step` calls (not a class attribute: a protocol's attributes are
# what `isinstance` asks a model for).
_STEP_METHODS: dict[type, str] = {TrainStep: "train_step", ValidStep: "valid_step"}

InferenceStep = ValidStep
"""Burn main's name for `ValidStep` (`InferenceStep::step`): the step validation and the
`Evaluator` run. A model implements it as `valid_step(batch)`."""


@runtime_checkable
class TestStep(Protocol):
    """A model with a step of its own for the test split: the `Evaluator` runs `test_step`
    when the model has one, else `valid_step`."""

    def test_step(self, batch: Any) -> Any:
        """Run the forward pass on `batch` (no autograd); return the item the metrics read."""

"""Fail at the first iteration when what reaches the learner is not what it takes.

The learner runs user code at its boundary: the data loader's batcher, `train_step`,
`valid_step` (`test_step` in an evaluation), and it steps the optimizer it was given on the
model it was given. When one of them hands over the wrong thing, the error would otherwise
come from deep inside the loop (`'ClassificationOutput' object has no attribute 'grads'`).
These checks run on the first iteration only (once per epoch, never per iteration after it)
and raise one message naming what was received and what to write instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnish.train.loop.batch_check import check_batch_device, model_device

if TYPE_CHECKING:
    from burnish.train.loop.data_adapter import DataAdapter

_LIGHTNING_NAMES = {
    "train_step": ("training_step",),
    "valid_step": ("validation_step", "val_step", "validate_step"),
}
"""Names a model from Lightning (or a typo) gives the step the learner calls."""

__all__ = [
    "check_first_batch",
    "check_inference_item",
    "check_model_device",
    "check_model_steps",
    "check_optimizer",
    "check_train_output",
]


def check_first_batch(batch: Any, loader: DataAdapter, model: nn.Module, split: str) -> None:
    """Check the first batch of a split: not None, and on the model's device.

    Raises:
        TypeError: if the batcher (or a torch loader's `collate_fn`) returned None.
        ValueError: if the batch is on another device than the model.
    """
    if batch is None:
        source = _batch_source(loader)
        raise TypeError(
            f"The {split} data loader gave the learner None as a batch: {source} returned "
            "None. It must return the batch the model's steps take, e.g. "
            "`return MnistBatch(images, targets)` (a dataclass, dict or tuple of tensors); "
            "check that it ends with a `return`."
        )
    check_batch_device(batch, model)


def check_train_output(output: Any, model: nn.Module) -> None:
    """Check what `train_step` returned: a `TrainOutput` holding gradients.

    Raises:
        TypeError: naming the type received and the `return` to write instead.
    """
    from burnish.optim import Gradients, GradientsParams
    from burnish.train.output import TrainOutput

    name = type(model).__name__
    if not isinstance(output, TrainOutput):
        raise TypeError(
            f"`{name}.train_step` returned {_describe(output)}; the Learner needs a "
            "TrainOutput: the gradients to apply and the item the metrics read. Write "
            "`item = self.forward_classification(batch)` then "
            "`return TrainOutput(self, bn.backward(item.loss), item)`."
        )
    if not isinstance(output.grads, (Gradients, GradientsParams)):
        raise TypeError(
            f"`{name}.train_step` returned a TrainOutput whose grads are "
            f"{_describe(output.grads)}; they must be what `bn.backward(loss)` returns. "
            "Write `return TrainOutput(self, bn.backward(item.loss), item)`."
        )


def check_inference_item(item: Any, model: nn.Module, step: str = "valid_step") -> None:
    """Check what `valid_step` (or `test_step`) returned: the item itself, not a TrainOutput.

    Raises:
        TypeError: if it returned a `TrainOutput`, saying to return its item.
    """
    from burnish.train.output import TrainOutput

    if isinstance(item, TrainOutput):
        raise TypeError(
            f"`{type(model).__name__}.{step}` returned a TrainOutput (holding "
            f"{_describe(item.item)}). It runs on `model.valid()` without autograd and "
            "returns the item the metrics read, without gradients: write "
            "`return self.forward_classification(batch)` (e.g. a ClassificationOutput) "
            "instead of `return TrainOutput(self, grads, item)`."
        )


def check_model_device(model: nn.Module, device: torch.device | None) -> None:
    """Check that every parameter of `model` is on the learner's device.

    Args:
        model: the model being trained.
        device: the device of `LearnerBuilder.devices`; None: that of the first parameter.

    Raises:
        ValueError: naming the first parameter elsewhere, both devices and the fix.
    """
    expected = device if device is not None else model_device(model)
    for name, param in model.named_parameters():
        if not _same_device(param.device, expected):
            where = "`.devices([...])`" if device is not None else "its first parameter"
            raise ValueError(
                f"The model's parameter `{name}` is on device {param.device}, but the learner "
                f"trains on {expected} (from {where}). Every parameter must be on that device: "
                f"move the whole model with `model.to_device({str(expected)!r})` before "
                f"building the learner, or pass `.devices([{str(expected)!r}])` to the "
                "LearnerBuilder so that `fit` moves it."
            )


def check_optimizer(optim: Any, model: nn.Module) -> None:
    """Check that `optim` is a burnish optimizer whose state, if any, is `model`'s.

    Raises:
        TypeError: for a `torch.optim` optimizer or an object without `step(lr, model, grads)`.
        ValueError: for an optimizer that already holds state of another model.
    """
    from burnish.optim import Optimizer

    kind = type(optim).__name__
    if isinstance(optim, torch.optim.Optimizer):
        raise TypeError(
            f"The optimizer is a torch.optim.{kind}, built over a model's parameters. The "
            "Learner steps a burnish optimizer with the gradients `train_step` returns "
            f"(`optim.step(lr, model, grads)`): write `{_burnish_name(kind)}().init()` from "
            "burnish.optim (it takes no parameters; the learner gives it the model)."
        )
    if not isinstance(optim, Optimizer):
        if callable(getattr(optim, "step", None)):
            return  # an optimizer of the user's own with Burn's `step(lr, model, grads)`
        if callable(getattr(optim, "init", None)):  # a config, given without `.init()`
            raise TypeError(
                f"The optimizer is the config {kind}, not an optimizer: build it with "
                f"`.init()`, e.g. `{kind}().init()`."
            )
        raise TypeError(
            f"The optimizer must be a burnish optimizer, e.g. `AdamConfig().init()`. "
            f"Received: {_describe(optim)}."
        )
    reason = optim.foreign_state(model)
    if reason is not None:
        raise ValueError(
            f"The {kind} given to the learner was made for another model: {reason}. Its "
            f"state belongs to the parameters it stepped. Give this model a new one, e.g. "
            f"`{kind}Config().init()`, or load the record saved with this model's optimizer."
        )


_TORCH_TO_BURNISH = {
    "SGD": "SgdConfig",
    "RMSprop": "RmsPropConfig",
    "Adagrad": "AdaGradConfig",
    "AdamW": "AdamWConfig",
}


def _burnish_name(torch_name: str) -> str:
    """The burnish config of a `torch.optim` optimizer, e.g. `SGD` -> `SgdConfig`."""
    return _TORCH_TO_BURNISH.get(torch_name, "AdamConfig")


def _describe(value: Any) -> str:
    """`None`, `a Tensor of shape [2, 3]` or `a ClassificationOutput`."""
    if value is None:
        return "None"
    if isinstance(value, torch.Tensor):
        return f"a Tensor of shape {list(value.shape)}"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _batch_source(loader: DataAdapter) -> str:
    """What built the batches: the batcher's or collate function's qualified name."""
    inner = getattr(loader, "loader", None)
    batcher = getattr(inner, "batcher", None)
    if batcher is not None:
        return f"the batcher `{type(batcher).__name__}.batch(items, device)`"
    collate = getattr(inner, "collate_fn", None)
    if collate is not None:
        name = getattr(collate, "__qualname__", type(collate).__name__)
        return f"the collate function `{name}`"
    return "the data loader"


def _same_device(actual: torch.device, expected: torch.device) -> bool:
    """Equal devices, `cuda` matching the current `cuda:N`."""
    if actual == expected:
        return True
    if actual.type != expected.type:
        return False
    if actual.index is None or expected.index is None:
        current = torch.cuda.current_device() if actual.type == "cuda" else 0
        return (actual.index or current) == (expected.index or current)
    return False


def check_model_steps(model: nn.Module, validating: bool) -> None:
    """Check at fit start that `model` has the steps the run calls: `train_step`, and
    `valid_step` when a validation loader was given.

    Raises:
        TypeError: naming the missing method, the Lightning-style method the model has instead
            (`training_step`, `validation_step`) if any, and, for `valid_step`, that leaving
            the validation loader out trains without validation.
    """
    for method in ("train_step", "valid_step") if validating else ("train_step",):
        if callable(getattr(model, method, None)):
            continue
        name = type(model).__name__
        message = f"The model {name} has no `{method}(batch)` method."
        found = [n for n in _LIGHTNING_NAMES[method] if callable(getattr(model, n, None))]
        if found:
            message += f" It has `{found[0]}`: did you mean `{method}`? Rename it."
        if method == "train_step":
            message += (
                " Implement `train_step` (returning TrainOutput) and `valid_step` (returning "
                "the metrics' item) on the model to train it with a Learner."
            )
        else:
            message += (
                " Implement `valid_step(batch)` (returning the metrics' item), or leave the "
                "validation loader out (`learner.fit(train_loader)`) to train without "
                "validation."
            )
        raise TypeError(message)

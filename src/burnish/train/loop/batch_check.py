"""Fail before the first step when a batch is not on the model's device."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch import nn

__all__ = ["check_batch_device", "model_device"]


def model_device(model: nn.Module) -> torch.device:
    """The device of the model's first parameter (CPU for a model without parameters)."""
    for tensor in model.parameters():
        return tensor.device
    return torch.device("cpu")


def _first_tensor(value: Any, name: str = "batch") -> tuple[str, torch.Tensor] | None:
    if isinstance(value, torch.Tensor):
        return name, value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    elif isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = [(str(index), inner) for index, inner in enumerate(value)]
    else:
        items = list(getattr(value, "__dict__", {}).items())
    for key, inner in items:
        found = _first_tensor(inner, f"{name}.{key}")
        if found is not None:
            return found
    return None


def check_batch_device(batch: Any, model: nn.Module) -> None:
    """Check that the first tensor found in `batch` is on the model's device.

    Args:
        batch: A tensor, or a dataclass, dict, list, tuple or object holding tensors.
        model: The model the batch is for.

    Raises:
        ValueError: naming the tensor and both devices, with the ways to fix it.
    """
    found = _first_tensor(batch)
    expected = model_device(model)
    if found is None or found[1].device == expected:
        return
    name, tensor = found
    raise ValueError(
        f"`{name}` is on device {tensor.device} but the model is on {expected}. Build the data "
        f"loader with `.set_device({str(expected)!r})`, or move the model with "
        "`model.to_device(...)`, or pass `.devices([...])` to the LearnerBuilder."
    )

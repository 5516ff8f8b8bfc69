"""The example input an export traces: the forward's inputs, from a validation loader's batch."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from burnish.export.base import ExportError

__all__ = ["Inputs", "batch_inputs", "batch_size", "example_input", "is_example"]

#: How to get the forward's inputs out of a batch: None (a tensor batch itself, or the first
#: element of a tuple or list batch), an attribute or key name, or `inputs(batch)`.
Inputs = str | Callable[[Any], Any] | None


def is_example(value: object) -> bool:
    """Whether `value` is already the forward's inputs: a tensor, or a tuple or list of them."""
    if isinstance(value, torch.Tensor):
        return True
    return isinstance(value, tuple | list) and all(isinstance(v, torch.Tensor) for v in value)


def example_input(loader: Iterable[Any], inputs: Inputs = None) -> tuple[torch.Tensor, ...]:
    """The forward's inputs in the first batch of `loader` (e.g. the validation loader).

    A burnish `DataLoader` keeps its epoch counter: taking the example does not change the
    batches its next epoch gives.

    Args:
        loader: a burnish `DataLoader`, a `torch.utils.data.DataLoader`, or any iterable of
            batches.
        inputs: how to get the forward's inputs out of a batch (see `batch_inputs`).

    Returns:
        The inputs, a tuple of tensors: `model(*example)` runs the model's forward.

    Raises:
        ExportError: if `loader` is not iterable or yields no batch, or as `batch_inputs`.

    Example:
        >>> example = example_input(dataloader_valid, inputs="images")  # doctest: +SKIP
    """
    from burnish.data.dataloader import DataLoader

    if isinstance(loader, str | bytes) or not isinstance(loader, Iterable):
        raise ExportError(
            "The example must be the forward's inputs (a tensor or a tuple of tensors) or a "
            f"data loader to take them from. Received: {type(loader).__name__}."
        )
    record = loader.to_record() if isinstance(loader, DataLoader) else None
    try:
        batch = next(iter(loader), _NO_BATCH)
    finally:
        if record is not None:
            loader.load_record(record)  # type: ignore[attr-defined]
    if batch is _NO_BATCH:
        raise ExportError(
            f"The data loader ({type(loader).__name__}) yielded no batch to take the example "
            "input from. Pass a loader with at least one item, e.g. the validation loader."
        )
    return batch_inputs(batch, inputs)


_NO_BATCH = object()


def batch_inputs(batch: Any, inputs: Inputs = None) -> tuple[torch.Tensor, ...]:
    """The forward's inputs in `batch`, as a tuple of tensors.

    Args:
        batch: one batch of a data loader.
        inputs: None: a tensor batch is the input, a tuple or list batch's first element is
            (the `(inputs, targets)` of a `TensorDataset`); a name: the batch's attribute
            (a dataclass field, e.g. `"images"`) or key (a dict batch); a callable:
            `inputs(batch)` returns a tensor or a tuple of tensors.

    Raises:
        ExportError: if the batch has no such attribute or key, or what was found is not a
            tensor or a tuple of tensors.
    """
    if callable(inputs):
        found = inputs(batch)
        source = f"inputs(batch) ({getattr(inputs, '__name__', 'the callable')})"
    elif isinstance(inputs, str):
        found, source = _field(batch, inputs), f"the batch's {inputs!r}"
    elif inputs is None:
        found, source = _default_inputs(batch), "the batch"
    else:
        raise ExportError(
            "`inputs` must be None, an attribute or key name, or a callable `inputs(batch)`. "
            f"Received: {type(inputs).__name__}."
        )
    example = (found,) if isinstance(found, torch.Tensor) else found
    if not is_example(example) or not example:
        raise ExportError(
            f"The model's input taken from {source} must be a tensor or a tuple of tensors. "
            f"Received: {_describe(found)}. Pass `inputs` (`--inputs` on the command line): "
            "the batch's field that holds the model's input, e.g. inputs='images'."
        )
    return tuple(example)


def batch_size(example: tuple[torch.Tensor, ...]) -> int:
    """The size of the first dimension the example's tensors share (the batch).

    Raises:
        ExportError: if no tensor has a dimension, their first dimensions differ, or the
            batch is empty.
    """
    sizes = {tensor.shape[0] for tensor in example if tensor.dim() >= 1}
    shapes = ", ".join(str(tuple(tensor.shape)) for tensor in example)
    if len(sizes) != 1:
        reason = "no input has a dimension" if not sizes else "their first dimensions differ"
        raise ExportError(
            f"The example's inputs have no common batch dimension ({reason}; shapes {shapes}). "
            "Export with a fixed input shape instead: dynamic_batch=False (--static-batch)."
        )
    size = sizes.pop()
    if size == 0:
        raise ExportError(
            f"The example batch is empty (shapes {shapes}). Pass a batch with at least one "
            "item, e.g. the validation loader's first batch."
        )
    return size


def _field(batch: Any, name: str) -> Any:
    if isinstance(batch, dict):
        if name in batch:
            return batch[name]
        raise ExportError(
            f"The batch (a dict) has no key {name!r}. Its keys: "
            f"{', '.join(map(repr, batch)) or 'none'}. Pass one of them as `inputs`."
        )
    if hasattr(batch, name):
        return getattr(batch, name)
    fields = [field for field in getattr(batch, "__dataclass_fields__", {})]
    hint = f" Its fields: {', '.join(fields)}." if fields else ""
    raise ExportError(
        f"The batch ({type(batch).__name__}) has no attribute {name!r}.{hint} Pass the name "
        "of the field holding the model's input as `inputs`."
    )


def _default_inputs(batch: Any) -> Any:
    if isinstance(batch, tuple | list) and batch:
        return batch[0]
    if isinstance(batch, torch.Tensor):
        return batch
    fields = list(getattr(batch, "__dataclass_fields__", {})) or (
        list(batch) if isinstance(batch, dict) else []
    )
    hint = f" (one of {', '.join(map(repr, fields))})" if fields else ""
    raise ExportError(
        f"Which part of a {type(batch).__name__} batch is the model's input? Pass `inputs`: "
        f"a field or key name{hint}, or a callable `inputs(batch)`."
    )


def _describe(value: Any) -> str:
    if isinstance(value, tuple | list):
        kinds = ", ".join(type(v).__name__ for v in value[:4]) + (", ..." if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} ({kinds})"
    return type(value).__name__

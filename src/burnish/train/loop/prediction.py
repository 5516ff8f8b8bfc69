"""`predict`: a trained model's outputs over a data loader (Lightning's `trainer.predict`).

Burn has no predict loop: a Burn user calls `model.valid()` and loops over the batches. This is
that loop, written once: the model's inference twin (`model.valid()`: eval mode, no autograd),
every batch of the loader in its order, on the model's device, one output per batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from burnish.data.dataloader.transfer import move_to_device
from burnish.module import valid
from burnish.train.loop.batch_check import model_device
from burnish.train.loop.data_adapter import data_adapter

__all__ = ["predict"]

PredictStep = Callable[[nn.Module, Any], Any]


def predict(model: nn.Module, dataloader: Any, step: PredictStep | None = None) -> list[Any]:
    """The model's output for every batch of `dataloader`, in the loader's order.

    The batches run through `model.valid()` (eval mode: dropout off, batch norm on its running
    statistics; no autograd) under `torch.no_grad()`, on the model's device: a burnish
    `DataLoader` is moved there, the tensors of a `torch.utils.data.DataLoader`'s batches
    (tensors, tuples, lists, dicts, dataclasses) are copied there. The model itself keeps its
    mode. Build the loader without `shuffle` for the dataset's order (batch `i` then holds
    items `i * batch_size ...`); `torch.cat(outputs)` joins tensor outputs.

    Args:
        model: the trained model (e.g. `result.model` or `result.best_model()`).
        dataloader: a burnish `DataLoader`, a `torch.utils.data.DataLoader`, or any sized
            iterable of batches.
        step: `step(model, batch) -> output`, called on the inference twin; default: the
            model's `predict_step(batch)` if it has one (Lightning's name), else
            `model(batch)`.

    Returns:
        One output per batch, as `step` returned it (on the model's device).

    Raises:
        TypeError: if `step` is not callable, or the loader is not one of those above.

    Example:
        >>> outputs = predict(model, loader_test, lambda model, batch: model(batch.images))
        ... # doctest: +SKIP
        >>> classes = torch.cat(outputs).argmax(dim=1)  # doctest: +SKIP
    """
    if step is not None and not callable(step):
        raise TypeError(
            "`step` must be a callable `step(model, batch) -> output`. Received: "
            f"{type(step).__name__}. E.g. `lambda model, batch: model(batch.images)`."
        )
    device = model_device(model)
    adapter = data_adapter(dataloader).to_device(device)
    inference = valid(model)
    run = _default_step(inference) if step is None else (lambda batch: step(inference, batch))
    with torch.no_grad():
        return [run(move_to_device(batch, device)) for batch in adapter.iterate()]


def _default_step(model: nn.Module) -> Callable[[Any], Any]:
    predict_step = getattr(model, "predict_step", None)
    return predict_step if callable(predict_step) else model

"""The learning-rate range test (Smith, 2015; fastai's `lr_find`, Lightning's `Tuner.lr_find`).

The model trains for `num_iterations` batches of the train data with the rate rising
exponentially from `min_lr` to `max_lr`, one rate per iteration: its own `train_step`, then
`optim.step(lr, model, grads)`, no scheduler. The losses stay on the device, stacked, and come
back to the host in one transfer every `READ_BACK_EVERY` iterations, where the divergence check
runs (a bounded overshoot, never a sync per step). Then the model, the optimizer and the
generators are put back exactly (`preserved_training`), and the result is written to
`lr_finder.json` in the artifact directory for `burnish report`.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnish.data.dataloader import DataLoader
from burnish.optim.params import GradientsParams
from burnish.tune.loss_curve import (
    check_beta,
    check_threshold,
    divergence_index,
    smooth_losses,
)
from burnish.tune.lr_finder_result import LR_FINDER_FILE, LrFinderResult
from burnish.tune.preserved import preserved_training

__all__ = ["READ_BACK_EVERY", "exponential_lrs", "lr_find"]

log = logging.getLogger("burnish.tune")

#: Iterations between two read-backs of the losses (one transfer each) and divergence checks.
READ_BACK_EVERY = 10


def lr_find(
    model: nn.Module,
    optim: Any,
    dataloader: Iterable[Any],
    *,
    min_lr: float = 1e-8,
    max_lr: float = 1.0,
    num_iterations: int = 100,
    early_stop_threshold: float | None = 4.0,
    beta: float = 0.98,
    device: torch.device | str | None = None,
    artifact_dir: str | os.PathLike | None = None,
) -> LrFinderResult:
    """Run the range test on `model` and put everything back as it was.

    Example:
        >>> result = lr_find(model, AdamConfig().init(), dataloader_train)  # doctest: +SKIP
        >>> result.suggestion()  # doctest: +SKIP
        0.0031622776601683794

    Args:
        model: a model with `train_step(batch) -> TrainOutput` whose item has a `loss`.
        optim: a burnish optimizer (`AdamConfig().init()`); its state is restored afterwards.
        dataloader: the train data: a burnish `DataLoader` (iterated on a copy, so its epoch
            counter does not move), a torch `DataLoader` or any iterable of batches; iterated
            again when it ends before `num_iterations`.
        min_lr: the first rate (> 0); Lightning's default.
        max_lr: the last rate (> `min_lr`).
        num_iterations: the rates tried (>= 2), one batch each.
        early_stop_threshold: stop once the smoothed loss exceeds this many times its best
            (> 1); None: only a non-finite loss stops the sweep.
        beta: the loss smoothing, in `[0, 1)`.
        device: move the model there first (what `fit` would do); None: where it is. A
            burnish `DataLoader`'s batches go to the model's device.
        artifact_dir: where to write `lr_finder.json` (rank 0 only under torch.distributed);
            None: nowhere.

    Returns:
        The rates, losses and smoothed losses; `suggestion()` picks a rate.

    Raises:
        ValueError: if a setting is out of range, or the data yields no batch.
        TypeError: if the model has no `train_step`, or its output carries no scalar loss.
    """
    lrs = exponential_lrs(min_lr, max_lr, num_iterations)
    check_beta(beta)
    check_threshold(early_stop_threshold)
    step = _train_step(model)
    _check_optim(optim)
    if device is not None:
        model.to(device)
    batches = _batches(dataloader, _device_of(model))
    try:
        with preserved_training(model, optim):
            model.train()
            losses = _sweep(step, model, optim, batches, lrs, early_stop_threshold, beta)
    finally:
        batches.close()  # a loader's iterator (and its workers) ends with the sweep
    result = LrFinderResult(
        lrs[: len(losses)], losses, beta, early_stop_threshold, num_iterations=num_iterations
    )
    if artifact_dir is not None and _is_main_process():
        result.save(Path(artifact_dir) / LR_FINDER_FILE)
    log.info("%r", result)
    return result


def exponential_lrs(min_lr: float, max_lr: float, num_iterations: int) -> list[float]:
    """`num_iterations` rates from `min_lr` to `max_lr` (both exactly), evenly spaced on a log
    scale: `min_lr * (max_lr / min_lr) ** (i / (num_iterations - 1))`, computed in logs so no
    ratio overflows.

    Raises:
        ValueError: if the bounds are not finite with `0 < min_lr < max_lr`, `num_iterations`
            is not an int >= 2, or the bounds are too close for that many distinct rates.
    """
    if isinstance(num_iterations, bool) or not isinstance(num_iterations, int):
        raise ValueError(f"`num_iterations` must be an int. Received: {num_iterations!r}.")
    if num_iterations < 2:
        raise ValueError(
            "`num_iterations` must be >= 2 (a sweep compares rates). "
            f"Received: num_iterations={num_iterations}."
        )
    for name, value in (("min_lr", min_lr), ("max_lr", max_lr)):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"`{name}` must be a number. Received: {name}={value!r}.")
    if not (math.isfinite(min_lr) and math.isfinite(max_lr) and 0 < min_lr < max_lr):
        raise ValueError(
            "The sweep needs finite rates with 0 < min_lr < max_lr (e.g. min_lr=1e-8, "
            f"max_lr=1.0). Received: min_lr={min_lr!r}, max_lr={max_lr!r}."
        )
    low, high = math.log(min_lr), math.log(max_lr)
    last = num_iterations - 1
    lrs = [min_lr, *(math.exp(low + (high - low) * i / last) for i in range(1, last)), max_lr]
    lrs = [float(min(max(lr, min_lr), max_lr)) for lr in lrs]
    if any(after <= before for before, after in itertools.pairwise(lrs)):
        raise ValueError(
            f"min_lr={min_lr!r} and max_lr={max_lr!r} are too close for {num_iterations} "
            "distinct rates; widen the range or lower `num_iterations`."
        )
    return lrs


def _sweep(
    step: Any,
    model: nn.Module,
    optim: Any,
    batches: Iterator[Any],
    lrs: list[float],
    threshold: float | None,
    beta: float,
) -> list[float]:
    """Train at each rate; the losses read so far when the sweep diverged, else all."""
    losses: list[float] = []
    pending: list[torch.Tensor] = []
    for index, lr in enumerate(lrs):
        output = step(next(batches))
        pending.append(_loss_of(output, index))
        grads = output.grads
        if not isinstance(grads, GradientsParams):
            grads = GradientsParams.from_grads(grads, model)
        model = optim.step(lr, model, grads)
        if len(pending) == READ_BACK_EVERY or index == len(lrs) - 1:
            losses += torch.stack(pending).float().cpu().tolist()  # one transfer
            pending = []
            stop = divergence_index(smooth_losses(losses, beta), threshold)
            if stop is not None:
                log.info("lr_find: the loss diverged at lr %.3g; the sweep stops", lrs[stop])
                return losses[: stop + 1]
    return losses


def _loss_of(output: Any, index: int) -> torch.Tensor:
    """The train output's loss, detached, as a 0-dim tensor (checked without a sync)."""
    loss = getattr(getattr(output, "item", None), "loss", None)
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise TypeError(
            "lr_find reads the loss of each iteration from the train step's output: "
            "`TrainOutput(model, grads, item)` with `item.loss` a one-element tensor (as "
            "`ClassificationOutput(loss, output, targets)` has). Iteration "
            f"{index} returned {type(output).__name__} whose item's loss is "
            f"{type(loss).__name__ if not isinstance(loss, torch.Tensor) else tuple(loss.shape)}."
        )
    return loss.detach().reshape(())


def _train_step(model: nn.Module) -> Any:
    step = getattr(model, "train_step", None)
    if not callable(step):
        raise TypeError(
            f"lr_find runs the model's `train_step`, and {type(model).__name__} has none. Add "
            "`def train_step(self, batch) -> TrainOutput` (return `TrainOutput(self, "
            "bn.backward(loss), item)`)."
        )
    return step


def _check_optim(optim: Any) -> None:
    if not all(
        callable(getattr(optim, name, None)) for name in ("step", "to_record", "load_record")
    ):
        raise TypeError(
            "lr_find steps the model with a burnish optimizer (`optim.step(lr, model, grads)`, "
            "its state put back with `to_record`/`load_record`), e.g. `AdamConfig().init()`. "
            f"Received: {type(optim).__name__}."
            + (" Use burnish.optim's config of the same optimizer instead of torch.optim's."
               if isinstance(optim, torch.optim.Optimizer) else "")
        )  # fmt: skip


def _is_main_process() -> bool:
    """Rank 0 under torch.distributed (the one that writes a run's files), or the only one."""
    distributed = torch.distributed.is_available() and torch.distributed.is_initialized()
    return not distributed or torch.distributed.get_rank() == 0


def _device_of(model: nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


def _batches(dataloader: Iterable[Any], device: torch.device) -> Generator[Any, None, None]:
    """The data's batches, epoch after epoch (a burnish loader's copy, on `device`)."""
    if isinstance(dataloader, DataLoader):
        dataloader = dataloader.to_device(device)  # a copy: the caller's epoch stays
    elif not isinstance(dataloader, Iterable):
        raise TypeError(
            "lr_find needs the train data: a burnish or torch DataLoader, or an iterable of "
            f"batches. Received: {type(dataloader).__name__}."
        )
    epoch = 0
    while True:
        count = 0
        for batch in dataloader:
            count += 1
            yield batch
        if count == 0:
            raise ValueError(
                "The train data yielded no batch"
                + (" when iterated again (a one-shot iterator?)" if epoch else "")
                + ". Pass a data loader with at least one batch"
                + (", or lower `num_iterations`." if epoch else ".")
            )
        epoch += 1

"""The one evaluation loop, and the rule for stopping inside a loop.

Validation inside `fit` (run.py) and the `Evaluator` (evaluator.py) both run `evaluate`:
iterate the loader, check the first batch, step under no autograd, check the first item,
process it, and ask whether to stop. What differs is passed in: the step, what processing
an item means (the split's processor, listeners), the stop check and the precision.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from burnish.train.loop.data_adapter import NO_BATCH, DataAdapter, no_batch_in_epoch
from burnish.train.loop.step_check import check_first_batch, check_inference_item

if TYPE_CHECKING:
    from burnish.train.interrupter import Interrupter
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.split import Split


def evaluate(
    loader: DataAdapter,
    step: Callable[[Any], Any],
    model: nn.Module,
    split: Split,
    process: Callable[[Any, int], None],
    stop: Callable[[int], bool],
    *,
    step_name: str = "valid_step",
    name: str | None = None,
    precision: contextlib.AbstractContextManager[Any] | None = None,
) -> tuple[int, bool]:
    """Run `step` over one epoch of `loader` under `torch.no_grad()` (and `precision`).

    Args:
        loader: The placed loader of the split.
        step: The inference step (`valid_step` or `test_step`), called once per batch.
        model: The model the checks name (first batch's device, the step's item).
        split: The split, for the checks' and the empty loader's messages.
        process: Called with each item and its 1-based iteration (the processor's work).
        stop: Called after each iteration: True ends the loop there, interrupted.
        step_name: The step's name, for the item check's message.
        name: The evaluation's name, for the empty loader's message.
        precision: The mixed precision context of the step, if any.

    Returns:
        The iterations run, and whether `stop` interrupted the loop.

    Raises:
        ValueError: If the loader drew no batch although its `len()` was not 0.
    """
    iteration = 0
    with torch.no_grad(), precision or contextlib.nullcontext():
        for iteration, batch in enumerate(loader.iterate(), 1):
            if iteration == 1 and batch is not NO_BATCH:
                check_first_batch(batch, loader, model, split)
            item = NO_BATCH if batch is NO_BATCH else step(batch)
            if iteration == 1:
                check_inference_item(item, model, step_name)
            process(item, iteration)
            if stop(iteration):
                return iteration, True
    if iteration == 0:  # its len() was not true
        raise no_batch_in_epoch(loader, split, name)
    return iteration, False


def stop_requested(
    interrupter: Interrupter, context: DistributedContext, iteration: int = 0, every: int = 1
) -> bool:
    """Whether to stop after `iteration` (training, validation or evaluation), or now (after
    an epoch, with the defaults).

    With several ranks, any rank's request counts (a preemption signal may reach one rank
    only); they agree every `every` iterations (a collective, at the processor's read-backs).
    """
    stop = interrupter.should_stop()
    if not context.enabled:
        return stop
    return iteration % every == 0 and context.any_rank(stop)

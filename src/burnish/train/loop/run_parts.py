"""The parts `Run` (run.py) builds for one fit before its loop starts: the model on its
device (broadcast, sharded), the metric loggers and renderer of this rank, mixed precision and
the compiled step."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch
from torch import nn

from burnish.train.loop.batch_check import model_device
from burnish.train.loop.compile import CompiledTrainStep, check_compiled_step
from burnish.train.loop.precision import MixedPrecision
from burnish.train.parallel.fsdp import shard_model
from burnish.train.split import TRAINING_SPLITS, Split

if TYPE_CHECKING:
    from burnish.optim import Optimizer
    from burnish.train.logger import MetricLogger
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.renderer.base import MetricsRenderer
    from burnish.train.settings.options import LearnerOptions

__all__ = ["compiled_step", "mixed_precision", "outputs", "place_model"]


def place_model(
    model: nn.Module, options: LearnerOptions, context: DistributedContext, sharded: bool
) -> nn.Module:
    """On the run's device, with rank 0's parameters, sharded under FSDP."""
    if context.device is not None:
        model.to(context.device)
    context.broadcast_module(model)
    if sharded:  # after the broadcast: every rank shards the same parameters
        model = shard_model(model, options.parallelism.shard_policy, options.precision.autocast)
    return model


def outputs(
    options: LearnerOptions, context: DistributedContext
) -> tuple[dict[Split, MetricLogger], MetricsRenderer]:
    """Loggers and renderer: rank 0 writes and draws; the others log in memory, silently."""
    from burnish.train.logger import FileMetricLogger, InMemoryMetricLogger
    from burnish.train.renderer import NullRenderer, default_renderer

    if not context.is_main:
        return {s: InMemoryMetricLogger() for s in TRAINING_SPLITS}, NullRenderer()
    loggers = options.logging.loggers or {
        s: FileMetricLogger(options.artifact_dir / s) for s in TRAINING_SPLITS
    }
    return dict(loggers), options.logging.renderer or default_renderer()


def mixed_precision(dtype: torch.dtype | None, model: nn.Module) -> MixedPrecision | None:
    return MixedPrecision(dtype, model_device(model)) if dtype is not None else None


def compiled_step(
    model: nn.Module,
    optim: Optimizer,
    options: LearnerOptions,
    context: DistributedContext,
    precision: MixedPrecision | None,
    warn: Callable[[str], None] | None = None,
) -> CompiledTrainStep | None:
    """With `compile(step=True)`: train_step and the optimizer step as one graph; `warn` says
    once if torch's compiler fails and the run trains on eagerly."""
    if not options.compilation.whole_step or options.compilation.kwargs is None:
        return None
    check_compiled_step(
        optim,
        grads_accumulation=options.optimization.grads_accumulation,
        mixed_precision=options.precision.autocast,
        strategy=options.parallelism.kind,
        world_size=context.world_size,
    )
    return CompiledTrainStep(model, optim, options.compilation.kwargs, precision, warn=warn)

"""What one `fit` holds for its whole length, set up in order and undone in reverse: the
artifact directory's run lock, its object storage (a URL's), the experiment log, the SIGINT
and preemption handlers, the background checkpoint writes (`fit` waits for them),
deterministic algorithms, gradient checkpointing, compiled forwards, and at the end the
trackers, the renderer and the logs."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from burnish.gradient_checkpointing import gradient_checkpointing
from burnish.train.components.ema_validation import EmaValidation
from burnish.train.loop.compile import compiled_forward, tracing_autograd
from burnish.train.loop.object_storage import held_storage

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from burnish.storage import RemoteArtifactDir
    from burnish.train.logger import ApplicationLoggerInstaller
    from burnish.train.loop.run import Run
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.report.processor import MetricsProcessor

__all__ = ["deterministic", "enter_directory", "run_session"]

log = logging.getLogger("burnish.train")


@contextlib.contextmanager
def run_session(run: Run) -> Iterator[None]:
    """Everything `run.fit` needs around its epochs, for as long as it runs."""
    options, context = run.options, run.context
    with contextlib.ExitStack() as stack:
        enter_directory(
            stack,
            context,
            options.artifact_dir,
            options.logging.application_logger,
            options.storage,
        )
        if context.enabled:
            log.info(
                "Distributed training: rank %d of %d on %s; rank 0 writes logs and checkpoints.",
                context.rank,
                context.world_size,
                context.device,
            )
        stack.enter_context(options.stopping.interrupter.catch_sigint())
        stack.enter_context(run.components.held())  # e.g. SIGTERM handlers, trackers
        stack.enter_context(run.checkpointer.writes())  # fit waits for the writes
        if run.grad_sync is not None:
            stack.callback(run.grad_sync.close)
        stack.enter_context(deterministic(options.precision.deterministic))
        if options.recompute.enabled:
            stack.enter_context(gradient_checkpointing(run.state.model, options.recompute.blocks))
        modules = [run.state.model, *_modules_of(run.valid_model)]
        if run.compiled_step is None:
            stack.enter_context(compiled_forward(modules, options.compilation.kwargs))
        else:
            stack.callback(run.compiled_step.close)
        stack.enter_context(tracing_autograd(run.compiled_step is not None))
        stack.callback(run.renderer.close)  # started by `fit` once there is a run to show
        stack.callback(_flush_loggers, run.processor)
        yield


def enter_directory(
    stack: contextlib.ExitStack,
    context: DistributedContext,
    directory: Path,
    installer: ApplicationLoggerInstaller | None,
    storage: RemoteArtifactDir | None = None,
) -> None:
    """Take `directory`'s run lock (rank 0 for all), open the object storage it mirrors (if
    any: its files pulled before the log opens) and, on rank 0, install the experiment log,
    all until `stack` closes: how a training run and an evaluation start."""
    stack.enter_context(context.run_lock(directory))
    if storage is not None:
        stack.enter_context(held_storage(context, storage))
    if installer is not None and context.is_main:
        installer.install()
        stack.callback(installer.uninstall)


@contextlib.contextmanager
def deterministic(enabled: bool) -> Iterator[None]:
    """Deterministic algorithms (and no cuDNN benchmarking) while inside; restored after."""
    if not enabled:
        yield
        return
    previous = torch.are_deterministic_algorithms_enabled()
    benchmark = torch.backends.cudnn.benchmark
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)
        torch.backends.cudnn.benchmark = benchmark


def _flush_loggers(processor: MetricsProcessor) -> None:
    for split in processor.splits.values():
        split.logger.flush()


def _modules_of(valid_model: nn.Module | EmaValidation) -> list[nn.Module]:
    return valid_model.modules if isinstance(valid_model, EmaValidation) else [valid_model]

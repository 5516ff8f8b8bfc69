"""`resolved`: the settings a builder holds, made ready for a run at build: what depends on
several settings (the checkpoint writer, the default retention, the metrics the settings add,
the renderer joined to a progress logger, the device of an execution strategy, the epochs of
a step budget) is made once here, and the settings that cannot work together are refused."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import torch

from burnish.train.loop.train_only import validation_settings
from burnish.train.settings.run_metrics import (
    check_ema_and_non_finite,
    check_watched_metrics,
    run_metrics,
)

if TYPE_CHECKING:
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.settings.options import LearnerOptions
    from burnish.train.settings.parallelism import ParallelismOptions

__all__ = ["resolved"]


def resolved(declared: LearnerOptions) -> LearnerOptions:
    """`declared` (a builder's settings) as the learner takes them.

    Raises:
        ValueError: for settings that cannot work together (see each message for the fix).
    """
    from burnish.train.checkpoint import default_checkpointing_strategy
    from burnish.train.renderer.burn_trait import as_metrics_renderer

    o = declared
    checkpointing, parallelism = o.checkpointing, o.parallelism
    checkpointer = _checkpointer(declared)
    if parallelism.kind == "fsdp" and o.precision.autocast == torch.float16:
        raise ValueError(
            "strategy('fsdp') trains in float32 or bfloat16: float16 needs a loss scaler "
            "whose inf/NaN check spans every rank's shard of the gradients. Received: "
            "mixed_precision='fp16'. Use mixed_precision('bf16')."
        )
    ema, on_non_finite = o.optimization.ema, o.optimization.on_non_finite
    check_ema_and_non_finite(ema, on_non_finite, parallelism.kind, o.compilation.whole_step)
    metrics = run_metrics(o.metrics, ema, on_non_finite)
    retention = checkpointing.retention or default_checkpointing_strategy()
    watched = []
    if o.stopping.early_stopping is not None:
        watched.append(("early_stopping", o.stopping.early_stopping.watched_metrics()))
    if checkpointer is not None and checkpointing.retention is not None:
        watched.append(("with_checkpointing_strategy", retention.watched_metrics()))
    check_watched_metrics(watched, metrics, o.validation.every)
    needed_by = validation_settings(
        o.metrics, o.stopping.early_stopping, checkpointing.retention, o.validation.every, ema
    )
    return dataclasses.replace(
        declared,
        metrics={split: tuple(split_metrics) for split, split_metrics in metrics.items()},
        stopping=dataclasses.replace(o.stopping, num_epochs=o.stopping.epochs()),
        validation=dataclasses.replace(o.validation, needed_by=needed_by),
        checkpointing=dataclasses.replace(
            checkpointing, checkpointer=checkpointer, retention=retention
        ),
        parallelism=_placed(parallelism),
        logging=dataclasses.replace(
            o.logging, renderer=as_metrics_renderer(o.logging.renderer, o.logging.progress_logger)
        ),
    )


def _checkpointer(declared: LearnerOptions) -> FileCheckpointer | None:
    """The writer of the checkpoint directories the settings ask for; None: no checkpoints."""
    from burnish.train.checkpoint.custom import CustomCheckpointers
    from burnish.train.checkpoint.file import FileCheckpointer

    checkpointing = declared.checkpointing
    directory = declared.artifact_dir / "checkpoint"
    checkpointer: FileCheckpointer | None = None
    if checkpointing.checkpointers is not None:
        checkpointer = CustomCheckpointers(directory, *checkpointing.checkpointers)
    elif checkpointing.recorder is not None:
        checkpointer = FileCheckpointer(directory, checkpointing.recorder)
    if checkpointer is not None:
        if declared.storage is not None:  # each commit uploaded, on the writer's thread
            checkpointer.after_commit = declared.storage.sync
        return checkpointer
    if checkpointing.resume_from is not None or checkpointing.every is not None:
        raise ValueError(
            "`checkpoint(...)`, `resume()` and `checkpoint_every(...)` need checkpoints: "
            "add `.with_file_checkpointer(recorder)` to the builder."
        )
    return None


def _placed(parallelism: ParallelismOptions) -> ParallelismOptions:
    """With an execution strategy: this process's device, and its parallelism on several."""
    execution = parallelism.execution
    if execution is None:
        return parallelism
    kind = execution.strategy_name if len(execution.devices) > 1 else parallelism.kind
    return dataclasses.replace(parallelism, device=execution.process_device(), kind=kind)

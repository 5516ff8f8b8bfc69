"""The one place where the loop's features become its components, in the order they are told
of each event. A new loop feature is its own file (a `Component`), one line here, its setter,
and its tests.

The order: preemption first (a signal during set-up ends the run before anything starts; as
`fit_end` goes in reverse, it raises `Preempted` after everything else has ended), the
non-finite guard (it wraps the optimizer step first), the step budget and validation inside
the epoch (when things happen), the average, early stopping, the listeners, the trackers (they
log the epoch values with those the listeners logged), and the profiler last (its steps end
after every other component's work of the iteration; it stops first at `fit_end`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from burnish.train.components.component import Component
from burnish.train.components.dispatch import Components
from burnish.train.components.early_stop import EarlyStop
from burnish.train.components.listeners import Listeners
from burnish.train.components.mid_epoch import MidEpochValidation
from burnish.train.components.non_finite import NonFiniteWatch
from burnish.train.components.preemption import Preemption, PreemptionSettings, PreemptionWatch
from burnish.train.components.step_budget import StepBudget
from burnish.train.split import Split

if TYPE_CHECKING:
    from torch import nn

    from burnish.train.logger import MetricLogger
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.report.announce import Announcer
    from burnish.train.settings.options import LearnerOptions

__all__ = ["components_for"]


def components_for(
    options: LearnerOptions,
    context: DistributedContext,
    model: nn.Module,
    *,
    scaled: bool,
    announce: Announcer,
    loggers: dict[Split, MetricLogger],
) -> Components:
    """The components of one fit.

    Args:
        options: the learner's settings.
        context: the ranks (rank 0 tracks and tells).
        model: the model being trained, on its device (the average copies it).
        scaled: whether a float16 loss scaler steps the optimizer.
        announce: the run's console and experiment-log lines.
        loggers: each split's metric logger.
    """
    stopping, optimization = options.stopping, options.optimization
    mid_epoch = MidEpochValidation(options.validation.every, _file_directory(loggers))
    watch = PreemptionWatch(stopping.preemption or PreemptionSettings(), stopping.interrupter)
    parts: list[Component] = [
        Preemption(watch, mid_epoch.where),
        NonFiniteWatch(
            optimization.on_non_finite,
            scaled=scaled,
            say=announce.warning if context.is_main else None,
            metrics=options.metrics[Split.TRAIN],
        ),
        StepBudget(stopping.num_epochs, stopping.max_iterations, optimization.grads_accumulation),
        mid_epoch,
    ]
    if optimization.ema is not None:
        from burnish.train.components.ema_average import EmaAverage

        parts.append(EmaAverage(model, optimization.ema))
    parts.append(EarlyStop(stopping.early_stopping))
    parts.append(Listeners(options.listeners, stopping.interrupter, context.is_main))
    if options.tracking.trackers and context.is_main:
        from burnish.train.components.tracking import Tracking

        parts.append(Tracking.for_run(options))
    if options.logging.profiling is not None and context.is_main:
        from burnish.train.components.profiler import Profiler

        parts.append(Profiler(options.logging.profiling))
    return Components(parts)


def _file_directory(loggers: dict[Split, MetricLogger]) -> Path | None:
    """The valid split's log directory, if its logs are files (`validations.json` goes there)."""
    from burnish.train.logger import FileMetricLogger

    logger = loggers[Split.VALID]
    return logger.directory if isinstance(logger, FileMetricLogger) else None

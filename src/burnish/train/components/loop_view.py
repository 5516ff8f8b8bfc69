"""`LoopView`: what a component may read of the fit it serves (`Component.bind`).

`Run` (loop/run.py) is the one implementation; a component depends on these names only, so the
loop can change the rest of itself without touching its components."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from burnish.train.checkpoint.learning import LearningCheckpointer
    from burnish.train.loop.state import TrainingState
    from burnish.train.metric.store import MetricStore
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.report.announce import Announcer
    from burnish.train.report.processor import MetricsProcessor
    from burnish.train.settings.options import LearnerOptions

__all__ = ["LoopView"]


class LoopView(Protocol):
    """The fit as its components see it.

    Attributes:
        options: the learner's settings.
        context: the ranks and the device.
        state: the run's changing state (model, optimizer, position, counts).
        processor: the metrics processor (read-backs, `log`).
        store: the metric logs, read back (early stopping's view).
        announce: one line each on the console and in the experiment log.
        checkpointer: the run's checkpoints (where the last one is, the run's line).
        num_epochs: the run's last epoch (set before `fit_start`).
    """

    options: LearnerOptions
    context: DistributedContext
    state: TrainingState
    processor: MetricsProcessor
    store: MetricStore
    announce: Announcer
    checkpointer: LearningCheckpointer
    num_epochs: int

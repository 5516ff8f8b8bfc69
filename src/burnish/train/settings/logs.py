"""`LoggingOptions`: where the run's metrics, progress and log records go."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from burnish.train.settings.fields import OptionGroup

if TYPE_CHECKING:
    from burnish.train.components.profiler import ProfileSettings
    from burnish.train.logger import ApplicationLoggerInstaller, MetricLogger
    from burnish.train.split import Split

__all__ = ["LoggingOptions"]


@dataclasses.dataclass(frozen=True)
class LoggingOptions(OptionGroup):
    """Where the run's metrics, progress and log records go.

    Attributes:
        loggers: the metric logger of each split; None: Burn's file logs in the artifact
            directory.
        renderer: the dashboard (a `MetricsRenderer`, or one written to Burn's traits until
            build makes it one); None: the default one for the terminal.
        progress_logger: Burn main's `TrainingProgressLogger`, told where the run is beside
            the renderer (joined to it at build); None: none.
        application_logger: installs the experiment log for the run; None: logging
            untouched.
        summary: print the LearnerSummary at the end.
        profiling: the steps `torch.profiler` records (`profile`), written to
            `profile/` and `experiment.log`; None: no profiling.
    """

    loggers: Mapping[Split, MetricLogger] | None = None
    renderer: Any = None
    progress_logger: Any = None
    application_logger: ApplicationLoggerInstaller | None = None
    summary: bool = False
    profiling: ProfileSettings | None = None

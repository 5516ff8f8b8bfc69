"""`TrackingOptions`: the experiment trackers the run is also sent to."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from burnish.train.components.tracking import DEFAULT_LOG_EVERY
from burnish.train.settings.fields import OptionGroup, positive

if TYPE_CHECKING:
    from burnish.train.logger.tracker import ExperimentLogger

__all__ = ["TrackingOptions"]


@dataclasses.dataclass(frozen=True)
class TrackingOptions(OptionGroup):
    """The experiment trackers the run is also sent to (rank 0).

    Attributes:
        trackers: experiment loggers that also get the run (`log_to`).
        config: the config the trackers record as parameters.
        log_every: the trackers get iteration values every this many global training steps
            (and validation iterations).
    """

    trackers: tuple[ExperimentLogger, ...] = ()
    config: Any = None
    log_every: int = positive("log_every", DEFAULT_LOG_EVERY)

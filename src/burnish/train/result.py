"""What `Learner.fit` returns (Burn's `TrainingResult`)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from torch import nn

__all__ = ["TrainingResult"]


@dataclasses.dataclass
class TrainingResult:
    """The trained model and how the run ended.

    Attributes:
        model: the trained model (the same object the learner was built with), as the last
            epoch trained left it (Burn's); with early stopping too, not the best epoch's
            (a `MetricCheckpointingStrategy` keeps that one's checkpoint).
        summary: None unless the builder's `.summary()` was asked for: then the
            `LearnerSummary` of the run's metric logs over its `epochs_completed` epochs (its
            "Total Epochs"), also printed; still None without numeric metrics or log files,
            and on ranks other than 0.
        epochs_completed: how many epochs the run has finished (training, validation and
            epoch checkpoint done), those before a resume included; an interrupted epoch does
            not count (0 if none finished). `resume()` of a run that had ended returns the
            count it ended with. The learner's summary covers exactly these epochs.
        stopped_early: True when early stopping ended the run (also when `resume()` finds
            it ended so).
        interrupted: True when the interrupter (Ctrl-C, `q` in the dashboard) ended the run.
        stopped_non_finite: True when `on_non_finite("stop")` ended the run at a non-finite
            loss or gradient (no checkpoint was written after it; `resume()` continues from
            the last one).
        ema: with `with_ema(...)`, the averaged model (a copy of the model's structure, in
            eval mode), else None.
        artifact_dir: where logs and checkpoints were written.
    """

    model: nn.Module
    summary: Any = None
    epochs_completed: int = 0
    stopped_early: bool = False
    interrupted: bool = False
    artifact_dir: Path | None = None
    stopped_non_finite: bool = False
    ema: nn.Module | None = None

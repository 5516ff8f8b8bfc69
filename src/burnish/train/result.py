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
        model: the trained model (the same object the learner was built with).
        summary: the `LearnerSummary` of the run's metric logs, or None without metrics.
        epochs_completed: the last epoch that ran to its end (0 if none did).
        stopped_early: True when early stopping ended the run.
        interrupted: True when the interrupter (Ctrl-C, `q` in the dashboard) ended the run.
        artifact_dir: where logs and checkpoints were written.
    """

    model: nn.Module
    summary: Any = None
    epochs_completed: int = 0
    stopped_early: bool = False
    interrupted: bool = False
    artifact_dir: Path | None = None

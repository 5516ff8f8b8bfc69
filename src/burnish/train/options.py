"""Everything a `LearnerBuilder` collects, handed to the `Learner` in one object."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import torch

from burnish.train.interrupter import Interrupter

__all__ = ["LearnerOptions"]


@dataclasses.dataclass
class LearnerOptions:
    """The learner's settings; built by `LearnerBuilder`, not by users."""

    artifact_dir: Path
    num_epochs: int
    metrics: dict[str, list[Any]]
    loggers: dict[str, Any]
    renderer: Any
    interrupter: Interrupter
    checkpointer: Any = None
    checkpointing_strategy: Any = None
    resume_from: int | str | None = None
    early_stopping: Any = None
    grads_accumulation: int | None = None
    devices: list[torch.device] = dataclasses.field(default_factory=list)
    application_logger: Any = None
    summary: bool = False
    checkpoint_every: int | None = None
    deterministic: bool = False
    compile: dict[str, Any] | None = None
    _store: Any = None

    def store(self) -> Any:
        """The metric store over this run's loggers (for strategies and early stopping)."""
        if self._store is None:
            from burnish.train.metric_store import MetricStore

            self._store = MetricStore(dict(self.loggers))
        return self._store

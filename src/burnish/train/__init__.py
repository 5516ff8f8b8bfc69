"""Burn's training system: `LearnerBuilder`, `Learner`, train/valid steps and their outputs.

See README.md in this folder for the loop's event order and how its parts meet.
"""

from __future__ import annotations

import importlib
from typing import Any

# name -> defining module, imported on first access (PEP 562) so that importing one part of
# burnish.train (a metric, a renderer) does not import the whole learner.
_LAZY = {
    "Aggregate": "burnish.train.metric_store",
    "CheckpointingAction": "burnish.train.checkpoint",
    "CheckpointingStrategy": "burnish.train.checkpoint",
    "ClassificationOutput": "burnish.train.output",
    "ComposedCheckpointingStrategy": "burnish.train.checkpoint",
    "Direction": "burnish.train.metric_store",
    "EarlyStoppingStrategy": "burnish.train.early_stopping",
    "Interrupter": "burnish.train.interrupter",
    "KeepLastNCheckpoints": "burnish.train.checkpoint",
    "Learner": "burnish.train.learner",
    "LearnerBuilder": "burnish.train.builder",
    "LearnerSummary": "burnish.train.summary",
    "MetricCheckpointingStrategy": "burnish.train.checkpoint",
    "MetricEarlyStoppingStrategy": "burnish.train.early_stopping",
    "MetricStore": "burnish.train.metric_store",
    "MultiLabelClassificationOutput": "burnish.train.output",
    "RegressionOutput": "burnish.train.output",
    "SequenceOutput": "burnish.train.output",
    "Split": "burnish.train.metric_store",
    "StoppingCondition": "burnish.train.early_stopping",
    "TrainOutput": "burnish.train.output",
    "TrainStep": "burnish.train.step",
    "TrainingResult": "burnish.train.result",
    "ValidStep": "burnish.train.step",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'burnish.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

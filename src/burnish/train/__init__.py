"""Burn's training system: `LearnerBuilder` and `SupervisedTraining`, `Learner`, `Evaluator`,
train/valid steps and their outputs, and `TrainingListener`s with their events.

See README.md in this folder for the loop's event order and how its parts meet.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what editors and type checkers see; at run time, imported on first use
    from burnish.train.checkpoint import (
        CheckpointingAction,
        CheckpointingStrategy,
        ComposedCheckpointingStrategy,
        KeepLastNCheckpoints,
        MetricCheckpointingStrategy,
    )
    from burnish.train.early_stopping import (
        EarlyStoppingStrategy,
        MetricEarlyStoppingStrategy,
        StoppingCondition,
    )
    from burnish.train.evaluator import EvaluationResult, Evaluator, EvaluatorBuilder
    from burnish.train.execution_strategy import (
        ExecutionStrategy,
        MultiDeviceOptim,
        SupervisedLearningStrategy,
        TrainingStrategy,
    )
    from burnish.train.interrupter import Interrupter
    from burnish.train.learner import Learner
    from burnish.train.learner_builder import LearnerBuilder
    from burnish.train.listener import (
        CheckpointEvent,
        EpochEndEvent,
        FitEndEvent,
        FitStartEvent,
        IterationEndEvent,
        ListenerEvent,
        TrainingListener,
        ValidationEndEvent,
    )
    from burnish.train.metric.store import Aggregate, Direction, MetricStore
    from burnish.train.output import (
        ClassificationOutput,
        MultiLabelClassificationOutput,
        RegressionOutput,
        SequenceOutput,
        TrainOutput,
    )
    from burnish.train.prediction import predict
    from burnish.train.preemption import Preempted
    from burnish.train.result import LearningResult, TrainingResult
    from burnish.train.split import Split
    from burnish.train.step import InferenceStep, TrainStep, ValidStep
    from burnish.train.summary import LearnerSummary
    from burnish.train.supervised import SupervisedTraining
    from burnish.train.training_components import TrainingComponents
    from burnish.train.training_events import (
        LearnerEvent,
        SupervisedTrainingEventProcessor,
        TrainingItem,
    )

# name -> defining module, imported on first access (PEP 562) so that importing one part of
# burnish.train (a metric, a renderer) does not import the whole learner.
_LAZY = {
    "Aggregate": "burnish.train.metric.store",
    "CheckpointEvent": "burnish.train.listener",
    "CheckpointingAction": "burnish.train.checkpoint",
    "CheckpointingStrategy": "burnish.train.checkpoint",
    "ClassificationOutput": "burnish.train.output",
    "ComposedCheckpointingStrategy": "burnish.train.checkpoint",
    "Direction": "burnish.train.metric.store",
    "EarlyStoppingStrategy": "burnish.train.early_stopping",
    "EpochEndEvent": "burnish.train.listener",
    "EvaluationResult": "burnish.train.evaluator",
    "Evaluator": "burnish.train.evaluator",
    "EvaluatorBuilder": "burnish.train.evaluator",
    "ExecutionStrategy": "burnish.train.execution_strategy",
    "MultiDeviceOptim": "burnish.train.execution_strategy",
    "SupervisedLearningStrategy": "burnish.train.execution_strategy",
    "TrainingStrategy": "burnish.train.execution_strategy",
    "TrainingComponents": "burnish.train.training_components",
    "LearnerEvent": "burnish.train.training_events",
    "SupervisedTrainingEventProcessor": "burnish.train.training_events",
    "TrainingItem": "burnish.train.training_events",
    "FitEndEvent": "burnish.train.listener",
    "FitStartEvent": "burnish.train.listener",
    "InferenceStep": "burnish.train.step",
    "Interrupter": "burnish.train.interrupter",
    "IterationEndEvent": "burnish.train.listener",
    "KeepLastNCheckpoints": "burnish.train.checkpoint",
    "Learner": "burnish.train.learner",
    "LearnerBuilder": "burnish.train.learner_builder",
    "LearnerSummary": "burnish.train.summary",
    "ListenerEvent": "burnish.train.listener",
    "MetricCheckpointingStrategy": "burnish.train.checkpoint",
    "MetricEarlyStoppingStrategy": "burnish.train.early_stopping",
    "MetricStore": "burnish.train.metric.store",
    "MultiLabelClassificationOutput": "burnish.train.output",
    "Preempted": "burnish.train.preemption",
    "predict": "burnish.train.prediction",
    "RegressionOutput": "burnish.train.output",
    "SequenceOutput": "burnish.train.output",
    "Split": "burnish.train.split",
    "StoppingCondition": "burnish.train.early_stopping",
    "SupervisedTraining": "burnish.train.supervised",
    "TrainOutput": "burnish.train.output",
    "TrainStep": "burnish.train.step",
    "TrainingListener": "burnish.train.listener",
    "TrainingResult": "burnish.train.result",
    "LearningResult": "burnish.train.result",
    "ValidStep": "burnish.train.step",
    "ValidationEndEvent": "burnish.train.listener",
}

__all__ = [
    "Aggregate",
    "CheckpointEvent",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ClassificationOutput",
    "ComposedCheckpointingStrategy",
    "Direction",
    "EarlyStoppingStrategy",
    "EpochEndEvent",
    "EvaluationResult",
    "Evaluator",
    "EvaluatorBuilder",
    "ExecutionStrategy",
    "MultiDeviceOptim",
    "SupervisedLearningStrategy",
    "TrainingStrategy",
    "TrainingComponents",
    "LearnerEvent",
    "SupervisedTrainingEventProcessor",
    "TrainingItem",
    "FitEndEvent",
    "FitStartEvent",
    "InferenceStep",
    "Interrupter",
    "IterationEndEvent",
    "KeepLastNCheckpoints",
    "Learner",
    "LearnerBuilder",
    "LearnerSummary",
    "ListenerEvent",
    "MetricCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "MetricStore",
    "MultiLabelClassificationOutput",
    "Preempted",
    "predict",
    "RegressionOutput",
    "SequenceOutput",
    "Split",
    "StoppingCondition",
    "SupervisedTraining",
    "TrainOutput",
    "TrainStep",
    "TrainingListener",
    "TrainingResult",
    "LearningResult",
    "ValidStep",
    "ValidationEndEvent",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'burnish.train' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

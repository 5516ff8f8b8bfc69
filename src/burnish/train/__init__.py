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
    from burnish.train.components.early_stopping import (
        EarlyStoppingStrategy,
        MetricEarlyStoppingStrategy,
        StoppingCondition,
    )
    from burnish.train.components.listener import (
        CheckpointEvent,
        EpochEndEvent,
        FitEndEvent,
        FitStartEvent,
        IterationEndEvent,
        ListenerEvent,
        TrainingListener,
        ValidationEndEvent,
    )
    from burnish.train.components.preemption import Preempted
    from burnish.train.interrupter import Interrupter
    from burnish.train.loop.evaluator import EvaluationResult, Evaluator, EvaluatorBuilder
    from burnish.train.loop.learner import Learner
    from burnish.train.loop.prediction import predict
    from burnish.train.loop.result import LearningResult, TrainingResult
    from burnish.train.loop.training_components import TrainingComponents
    from burnish.train.loop.training_events import (
        LearnerEvent,
        SupervisedTrainingEventProcessor,
        TrainingItem,
    )
    from burnish.train.metric.store import Aggregate, Direction, MetricStore
    from burnish.train.output import (
        ClassificationOutput,
        MultiLabelClassificationOutput,
        RegressionOutput,
        SequenceOutput,
        TrainOutput,
    )
    from burnish.train.parallel.execution_strategy import (
        ExecutionStrategy,
        MultiDeviceOptim,
        SupervisedLearningStrategy,
        TrainingStrategy,
    )
    from burnish.train.report.summary import LearnerSummary
    from burnish.train.settings.learner_builder import LearnerBuilder
    from burnish.train.settings.supervised import SupervisedTraining
    from burnish.train.split import Split
    from burnish.train.step import InferenceStep, TrainStep, ValidStep

# name -> defining module, imported on first access (PEP 562) so that importing one part of
# burnish.train (a metric, a renderer) does not import the whole learner.
_LAZY = {
    "Aggregate": "burnish.train.metric.store",
    "CheckpointEvent": "burnish.train.components.listener",
    "CheckpointingAction": "burnish.train.checkpoint",
    "CheckpointingStrategy": "burnish.train.checkpoint",
    "ClassificationOutput": "burnish.train.output",
    "ComposedCheckpointingStrategy": "burnish.train.checkpoint",
    "Direction": "burnish.train.metric.store",
    "EarlyStoppingStrategy": "burnish.train.components.early_stopping",
    "EpochEndEvent": "burnish.train.components.listener",
    "EvaluationResult": "burnish.train.loop.evaluator",
    "Evaluator": "burnish.train.loop.evaluator",
    "EvaluatorBuilder": "burnish.train.loop.evaluator",
    "ExecutionStrategy": "burnish.train.parallel.execution_strategy",
    "MultiDeviceOptim": "burnish.train.parallel.execution_strategy",
    "SupervisedLearningStrategy": "burnish.train.parallel.execution_strategy",
    "TrainingStrategy": "burnish.train.parallel.execution_strategy",
    "TrainingComponents": "burnish.train.loop.training_components",
    "LearnerEvent": "burnish.train.loop.training_events",
    "SupervisedTrainingEventProcessor": "burnish.train.loop.training_events",
    "TrainingItem": "burnish.train.loop.training_events",
    "FitEndEvent": "burnish.train.components.listener",
    "FitStartEvent": "burnish.train.components.listener",
    "InferenceStep": "burnish.train.step",
    "Interrupter": "burnish.train.interrupter",
    "IterationEndEvent": "burnish.train.components.listener",
    "KeepLastNCheckpoints": "burnish.train.checkpoint",
    "Learner": "burnish.train.loop.learner",
    "LearnerBuilder": "burnish.train.settings.learner_builder",
    "LearnerSummary": "burnish.train.report.summary",
    "ListenerEvent": "burnish.train.components.listener",
    "MetricCheckpointingStrategy": "burnish.train.checkpoint",
    "MetricEarlyStoppingStrategy": "burnish.train.components.early_stopping",
    "MetricStore": "burnish.train.metric.store",
    "MultiLabelClassificationOutput": "burnish.train.output",
    "Preempted": "burnish.train.components.preemption",
    "predict": "burnish.train.loop.prediction",
    "RegressionOutput": "burnish.train.output",
    "SequenceOutput": "burnish.train.output",
    "Split": "burnish.train.split",
    "StoppingCondition": "burnish.train.components.early_stopping",
    "SupervisedTraining": "burnish.train.settings.supervised",
    "TrainOutput": "burnish.train.output",
    "TrainStep": "burnish.train.step",
    "TrainingListener": "burnish.train.components.listener",
    "TrainingResult": "burnish.train.loop.result",
    "LearningResult": "burnish.train.loop.result",
    "ValidStep": "burnish.train.step",
    "ValidationEndEvent": "burnish.train.components.listener",
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

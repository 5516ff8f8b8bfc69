"""Metric loggers (one line per iteration, Burn's `epoch-N/<Metric>.log` layout), the
experiment log installer, and experiment trackers (TensorBoard, CSV, MLflow, Weights & Biases;
each optional package is imported only when its logger is created)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time each name is imported on first use
    from burnish.train.logger.application import (
        ApplicationLoggerInstaller,
        FileApplicationLoggerInstaller,
    )
    from burnish.train.logger.base import LoggerPositions, MetricLogger, metric_file_stem
    from burnish.train.logger.csv_logger import CsvLogger
    from burnish.train.logger.file import FileMetricLogger
    from burnish.train.logger.in_memory import InMemoryMetricLogger
    from burnish.train.logger.mlflow_logger import MlflowLogger
    from burnish.train.logger.progress import EvaluationProgressLogger, TrainingProgressLogger
    from burnish.train.logger.tensorboard_logger import TensorBoardLogger
    from burnish.train.logger.tracker import ExperimentLogger, ResumePosition, RunInfo
    from burnish.train.logger.wandb_logger import WandbLogger

# name -> defining module, imported on first access (PEP 562): reading logs needs no torch.
_LAZY = {
    "ApplicationLoggerInstaller": "burnish.train.logger.application",
    "CsvLogger": "burnish.train.logger.csv_logger",
    "EvaluationProgressLogger": "burnish.train.logger.progress",
    "ExperimentLogger": "burnish.train.logger.tracker",
    "FileApplicationLoggerInstaller": "burnish.train.logger.application",
    "FileMetricLogger": "burnish.train.logger.file",
    "InMemoryMetricLogger": "burnish.train.logger.in_memory",
    "LoggerPositions": "burnish.train.logger.base",
    "MetricLogger": "burnish.train.logger.base",
    "MlflowLogger": "burnish.train.logger.mlflow_logger",
    "ResumePosition": "burnish.train.logger.tracker",
    "RunInfo": "burnish.train.logger.tracker",
    "TensorBoardLogger": "burnish.train.logger.tensorboard_logger",
    "TrainingProgressLogger": "burnish.train.logger.progress",
    "WandbLogger": "burnish.train.logger.wandb_logger",
    "metric_file_stem": "burnish.train.logger.base",
}

__all__ = [
    "ApplicationLoggerInstaller",
    "CsvLogger",
    "EvaluationProgressLogger",
    "ExperimentLogger",
    "FileApplicationLoggerInstaller",
    "FileMetricLogger",
    "InMemoryMetricLogger",
    "LoggerPositions",
    "MetricLogger",
    "MlflowLogger",
    "ResumePosition",
    "RunInfo",
    "TensorBoardLogger",
    "TrainingProgressLogger",
    "WandbLogger",
    "metric_file_stem",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

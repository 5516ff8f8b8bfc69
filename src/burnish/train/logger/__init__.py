"""Metric loggers (one line per iteration, Burn's `epoch-N/<Metric>.log` layout), the
experiment log installer, and experiment trackers (TensorBoard, CSV, MLflow, Weights & Biases;
each optional package is imported only when its logger is created)."""

from burnish.train.logger.application import (
    ApplicationLoggerInstaller,
    FileApplicationLoggerInstaller,
)
from burnish.train.logger.base import LoggerPositions, MetricLogger, metric_file_stem
from burnish.train.logger.csv_logger import CsvLogger
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.in_memory import InMemoryMetricLogger
from burnish.train.logger.mlflow_logger import MlflowLogger
from burnish.train.logger.tensorboard_logger import TensorBoardLogger
from burnish.train.logger.tracker import ExperimentLogger, ResumePosition, RunInfo
from burnish.train.logger.wandb_logger import WandbLogger

__all__ = [
    "ApplicationLoggerInstaller",
    "CsvLogger",
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
    "WandbLogger",
    "metric_file_stem",
]

"""Metric loggers (one line per iteration, Burn's `epoch-N/<Metric>.log` layout) and the
experiment log installer."""

from burnish.train.logger.application import (
    ApplicationLoggerInstaller,
    FileApplicationLoggerInstaller,
)
from burnish.train.logger.base import LoggerPositions, MetricLogger, metric_file_stem
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.in_memory import InMemoryMetricLogger

__all__ = [
    "ApplicationLoggerInstaller",
    "FileApplicationLoggerInstaller",
    "FileMetricLogger",
    "InMemoryMetricLogger",
    "LoggerPositions",
    "MetricLogger",
    "metric_file_stem",
]

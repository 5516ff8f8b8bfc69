"""Progress loggers (Burn main's `TrainingProgressLogger` and `EvaluationProgressLogger`).

A progress logger hears where a run is, not its metric values: `with_progress_logger(logger)`
on `SupervisedTraining`/`LearnerBuilder` and on `EvaluatorBuilder`. Burn's call sequence:

    training:    start(total_epochs, starting_epoch, total_items)
                   per epoch: start_split("train", n), update_split(items)..., end_split(),
                              start_split("valid", n), update_split(items)..., end_split(),
                              update_epoch(epoch)
                 end()                        (also when the run is interrupted)
    evaluation:  start_global_progress(total_tests)
                   per data set: start_test(name, n), update_test_progress(items)...,
                                 end_test()
                 end_global_progress()

burnish calls `update_split`/`update_test_progress` (and `log_event_*("Iteration")`) at the
renderer's pace (about 10 times a second, and at the first batch of each split), not after
every batch: each call follows a read-back of the metrics from the device.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["EvaluationProgressLogger", "TrainingProgressLogger", "check_progress_logger"]


class TrainingProgressLogger(ABC):
    """Hears a training run's progress (Burn's `TrainingProgressLogger` trait)."""

    @abstractmethod
    def start(self, total_epochs: int, starting_epoch: int, total_items: int | None) -> None:
        """The run starts at `starting_epoch` (from 1) of `total_epochs`."""

    @abstractmethod
    def update_epoch(self, epoch: int) -> None:
        """`epoch` ended: its train and valid splits are done."""

    @abstractmethod
    def start_split(self, split: str, total_items: int) -> None:
        """A split (`"train"` or `"valid"`) of `total_items` items starts."""

    @abstractmethod
    def update_split(self, items_processed: int) -> None:
        """`items_processed` items of the current split are done."""

    @abstractmethod
    def end_split(self) -> None:
        """The current split ended."""

    @abstractmethod
    def end(self) -> None:
        """The run ended, completed or interrupted."""

    @abstractmethod
    def log_event_training(self, event: str) -> None:
        """A named event (`"Iteration"`)."""


class EvaluationProgressLogger(ABC):
    """Hears an evaluation's progress (Burn's `EvaluationProgressLogger` trait)."""

    @abstractmethod
    def start_global_progress(self, total_tests: int) -> None:
        """An evaluation of `total_tests` data sets starts."""

    @abstractmethod
    def start_test(self, name: str, total_items: int) -> None:
        """The data set `name` of `total_items` items starts."""

    @abstractmethod
    def update_test_progress(self, items_processed: int) -> None:
        """`items_processed` items of the current data set are done."""

    @abstractmethod
    def end_test(self) -> None:
        """The current data set is done."""

    @abstractmethod
    def end_global_progress(self) -> None:
        """The evaluation ended, completed or interrupted."""

    @abstractmethod
    def log_event_evaluation(self, event: str) -> None:
        """A named event (`"Iteration"`)."""


def check_progress_logger(logger: object, method: str) -> None:
    """Raise a `TypeError` unless `logger` has `method` (a progress logger of Burn's trait).

    Args:
        logger: what `with_progress_logger` received.
        method: `"update_split"` (training) or `"update_test_progress"` (evaluation).
    """
    if not callable(getattr(logger, method, None)):
        kind = "TrainingProgressLogger" if method == "update_split" else "EvaluationProgressLogger"
        raise TypeError(
            f"`with_progress_logger` takes a {kind} (burnish.train.logger.{kind}: Burn's "
            f"trait, with `{method}` and the rest). Received: {type(logger).__name__}, "
            f"which has no `{method}` method."
        )

"""The end-of-training table of each metric's best and worst epoch (Burn's `LearnerSummary`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Iterable
from pathlib import Path

from burnish.train.logger.base import DamagedLogError
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.validations import read_validations
from burnish.train.metric.store import Aggregate, MetricStore
from burnish.train.split import Split

__all__ = ["LearnerSummary", "MetricSummary", "MetricSummaryEntry", "SummaryMetrics"]

log = logging.getLogger("burnish.train")


@dataclasses.dataclass(frozen=True)
class MetricSummaryEntry:
    """A metric's epoch value (Burn: `summary::MetricEntry`).

    Attributes:
        step: The epoch.
        value: The mean of the metric over that epoch.
    """

    step: int
    value: float


@dataclasses.dataclass(frozen=True)
class MetricSummary:
    """The epoch values of one metric on one split (Burn: `MetricSummary`)."""

    name: str
    entries: list[MetricSummaryEntry]

    @classmethod
    def collect(
        cls, store: MetricStore, name: str, split: Split, epochs: int
    ) -> MetricSummary | None:
        """The mean of `name` for each of epochs `1..epochs` that has one; None if none has."""
        entries = []
        for epoch in range(1, epochs + 1):
            value = store.find_metric(name, epoch, Aggregate.MEAN, split)
            if value is not None:
                entries.append(MetricSummaryEntry(epoch, value))
        return cls(name, entries) if entries else None

    @property
    def min(self) -> MetricSummaryEntry:
        """The lowest entry (the first of equal ones; NaN only if every value is NaN)."""
        return min(self.entries, key=_order)

    @property
    def max(self) -> MetricSummaryEntry:
        """The highest entry (the last of equal ones; NaN counts as highest, as in Burn)."""
        return max(reversed(self.entries), key=_order)


def _order(entry: MetricSummaryEntry) -> tuple[bool, float]:
    # Burn's `cmp_f64`: NaN is greater than every number.
    return (math.isnan(entry.value), 0.0 if math.isnan(entry.value) else entry.value)


@dataclasses.dataclass(frozen=True)
class SummaryMetrics:
    """The metric summaries of the training and validation splits."""

    train: list[MetricSummary]
    valid: list[MetricSummary]


@dataclasses.dataclass(frozen=True)
class LearnerSummary:
    """Min and max epoch value of every metric, per split, as Burn prints after training.

    Example:
        >>> print(LearnerSummary.from_dir("artifacts", ["Accuracy", "Loss"]))
        ======================== Learner Summary ========================
        Total Epochs: 2
        <BLANKLINE>
        <BLANKLINE>
        | Split | Metric   | Min.     | Epoch    | Max.     | Epoch    |
        |-------|----------|----------|----------|----------|----------|
        | Train | Accuracy | 80.500   | 1        | 91.250   | 2        |
        ...

    Attributes:
        epochs: The number of epochs summarised ("Total Epochs"): the epochs the run completed
            when the learner prints it (its `TrainingResult.epochs_completed`, so an
            interrupted epoch is left out), else the highest `epoch-N` directory of the logs.
        metrics: The per-split metric summaries.
        model: The model's description, shown above the table when set (`with_model`).
        validations: For a run that validated inside its epochs (`valid_every`), the
            validations summarised: the valid split's epochs are then validations (its rows'
            "Epoch" is the validation's number); None otherwise.
    """

    epochs: int
    metrics: SummaryMetrics
    model: str | None = None
    validations: int | None = None

    @classmethod
    def from_dir(
        cls,
        artifact_dir: str | os.PathLike,
        metrics: Iterable[str] | None = None,
        epochs: int | None = None,
        validations: int | None = None,
    ) -> LearnerSummary:
        """Read the summary from `<artifact_dir>/train` and `<artifact_dir>/valid` logs.

        A run that validated inside its epochs (`valid/validations.json`, see
        `burnish.train.logger.validations`) has one valid `epoch-N` per validation: the valid
        split is then summarised over its validations, the train split over its epochs.

        Args:
            artifact_dir: The learner's artifact directory.
            metrics: The metric names, in table order; None for every numeric metric found
                in the logs, sorted by name.
            epochs: Summarise epochs `1..epochs` (the learner passes the epochs completed);
                None for every epoch that has logs.
            validations: Summarise validations `1..validations` of a run with
                `valid_every` (the learner passes those done); None: those listed in
                `valid/validations.json`, if there is one.

        Raises:
            FileNotFoundError: if `artifact_dir` or both its `train` and `valid` are missing.
        """
        directory = Path(artifact_dir)
        if not directory.is_dir():
            raise FileNotFoundError(
                f"Artifact directory does not exist at: {directory}. Pass the directory given "
                "to `LearnerBuilder(artifact_dir)`."
            )
        train, valid = (FileMetricLogger(directory / s) for s in (Split.TRAIN, Split.VALID))
        if not train.directory.is_dir() and not valid.directory.is_dir():
            raise FileNotFoundError(
                f"No training or validation artifacts found at: {directory} (expected `train/` "
                "or `valid/` with `epoch-N/<Metric>.log` files)."
            )
        store = MetricStore({Split.TRAIN: train, Split.VALID: valid})
        try:
            points = read_validations(valid.directory)
        except ValueError as error:  # the logs are still readable: as epochs
            log.warning("%s The valid split is summarised by its epoch-N directories.", error)
            points = None
        if validations is None and points is not None:
            validations = len(points)
        if epochs is None:
            epochs = max(train.epochs(), valid.epochs()) if validations is None else train.epochs()
        if metrics is not None:
            return cls.from_store(store, list(metrics), epochs, validations=validations)
        names = sorted(set(train.metric_names()) | set(valid.metric_names()))
        return cls.from_store(store, names, epochs, skip_unreadable=True, validations=validations)

    @classmethod
    def from_store(
        cls,
        store: MetricStore,
        metrics: Iterable[str],
        epochs: int,
        skip_unreadable: bool = False,
        validations: int | None = None,
    ) -> LearnerSummary:
        """Build the summary of `metrics` over epochs `1..epochs` from a metric store.

        Args:
            store: A store with train and valid loggers.
            metrics: The metric names, in table order.
            epochs: The number of epochs to read.
            skip_unreadable: Leave out metrics whose logs are not numeric instead of raising.
            validations: With `valid_every`, the number of validations (the valid split's
                epochs) to read; None: the valid split has `epochs` epochs.
        """
        summaries: dict[Split, list[MetricSummary]] = {}
        for split in (Split.TRAIN, Split.VALID):
            summaries[split] = []
            count = validations if split is Split.VALID and validations is not None else epochs
            for name in metrics:
                try:
                    summary = MetricSummary.collect(store, name, split, count)
                except ValueError as error:
                    if not skip_unreadable:
                        raise
                    if isinstance(error, DamagedLogError):  # not a text metric: say so
                        log.warning("%s %s is left out of the summary: %s", split, name, error)
                    summary = None
                if summary is not None:
                    summaries[split].append(summary)
        train, valid = summaries[Split.TRAIN], summaries[Split.VALID]
        return cls(epochs, SummaryMetrics(train, valid), validations=validations)

    def with_model(self, name: str) -> LearnerSummary:
        """A copy that shows `name` (e.g. `str(model)`) above the table."""
        return dataclasses.replace(self, model=name)

    def __str__(self) -> str:
        split_width = max(len("Split"), len("Train"), len("Valid"))
        all_metrics = self.metrics.train + self.metrics.valid
        metric_width = max([len("Metric")] + [len(metric.name) for metric in all_metrics])
        text = f"{'=' * 24} Learner Summary {'=' * 24}\n"
        if self.model is not None:
            text += f"Model:\n{self.model}\n"
        text += f"Total Epochs: {self.epochs}\n"
        if self.validations is not None:
            text += f"Validations: {self.validations} (the Epoch of a Valid row: its number)\n"
        text += "\n\n"
        text += (
            f"| {'Split':<{split_width}} | {'Metric':<{metric_width}} "
            "| Min.     | Epoch    | Max.     | Epoch    |\n"
            f"|{'-' * (split_width + 2)}|{'-' * (metric_width + 2)}"
            "|----------|----------|----------|----------|\n"
        )
        for split, metrics in (("Train", self.metrics.train), ("Valid", self.metrics.valid)):
            for metric in metrics:
                if not metric.entries:
                    continue
                low, high = metric.min, metric.max
                text += (
                    f"| {split:<{split_width}} | {metric.name:<{metric_width}} "
                    f"| {_format_value(low.value)}| {low.step:<9}"
                    f"| {_format_value(high.value)}| {high.step:<9}|\n"
                )
        return text


def _format_value(value: float) -> str:
    """Burn's `fmt_val`: `{:<9.3}`, or `{:<9.3e}` below 1e-2 (Rust's float formatting)."""
    if math.isnan(value):
        text = "NaN"
    elif math.isinf(value):
        text = "inf" if value > 0 else "-inf"
    elif value < 1e-2:
        mantissa, exponent = f"{value:.3e}".split("e")
        text = f"{mantissa}e{int(exponent)}"
    else:
        text = f"{value:.3f}"
    return f"{text:<9}"

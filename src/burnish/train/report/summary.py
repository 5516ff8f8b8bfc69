"""The end-of-training table of each metric's best and worst epoch (Burn's `LearnerSummary`)."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from burnish.train.logger.base import DamagedLogError
from burnish.train.logger.file import FileMetricLogger
from burnish.train.logger.validations import read_validations
from burnish.train.metric.store import Aggregate, MetricStore
from burnish.train.report.summary_format import table_text, value_text
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.settings.options import LearnerOptions

__all__ = [
    "LearnerSummary",
    "MetricSummary",
    "MetricSummaryEntry",
    "SummaryMetrics",
    "learner_summary",
]

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
    """The metric summaries of the training and validation splits, and of each evaluation
    (`test`: the evaluation's directory name under `test/` -> its metrics, one entry each)."""

    train: list[MetricSummary]
    valid: list[MetricSummary]
    test: dict[str, list[MetricSummary]] = dataclasses.field(default_factory=dict)


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
        """Read the summary from `<artifact_dir>/train` and `<artifact_dir>/valid` logs, and
        the evaluations' `<artifact_dir>/test/<name>/` logs (an `Evaluator`'s).

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
            FileNotFoundError: if `artifact_dir` is missing, or has none of `train`, `valid`
                and `test`.
        """
        directory = Path(artifact_dir)
        if not directory.is_dir():
            raise FileNotFoundError(
                f"Artifact directory does not exist at: {directory}. Pass the directory given "
                "to `LearnerBuilder(artifact_dir)`."
            )
        train, valid = (FileMetricLogger(directory / s) for s in (Split.TRAIN, Split.VALID))
        tests = _evaluation_loggers(directory)
        if not train.directory.is_dir() and not valid.directory.is_dir() and not tests:
            raise FileNotFoundError(
                f"No training, validation or test artifacts found at: {directory} (expected "
                "`train/` or `valid/` with `epoch-N/<Metric>.log` files, or `test/<name>/`)."
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
        loggers = [train, valid, *tests.values()]
        skip = metrics is None
        names = (
            list(metrics)
            if metrics is not None
            else sorted({n for logger in loggers for n in logger.metric_names()})
        )
        summary = cls.from_store(
            store, names, epochs, skip_unreadable=skip, validations=validations
        )
        test = {
            tag: _collect(MetricStore({Split.TEST: logger}), names, Split.TEST, 1, skip)
            for tag, logger in tests.items()
        }
        metrics_ = dataclasses.replace(summary.metrics, test={k: v for k, v in test.items() if v})
        return dataclasses.replace(summary, metrics=metrics_)

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
        names = list(metrics)
        valid_count = validations if validations is not None else epochs
        train = _collect(store, names, Split.TRAIN, epochs, skip_unreadable)
        valid = _collect(store, names, Split.VALID, valid_count, skip_unreadable)
        return cls(epochs, SummaryMetrics(train, valid), validations=validations)

    def with_model(self, name: str) -> LearnerSummary:
        """A copy that shows `name` (e.g. `str(model)`) above the table."""
        return dataclasses.replace(self, model=name)

    def _repr_html_(self) -> str:
        """The table as HTML: how a notebook shows the summary."""
        from burnish.train.report.summary_html import summary_html  # the renderers: on use

        return summary_html(self)

    def __str__(self) -> str:
        tests = {f"Test ({tag})": metrics for tag, metrics in sorted(self.metrics.test.items())}
        text = f"{'=' * 24} Learner Summary {'=' * 24}\n"
        if self.model is not None:
            text += f"Model:\n{self.model}\n"
        text += f"Total Epochs: {self.epochs}\n"
        if self.validations is not None:
            text += f"Validations: {self.validations} (the Epoch of a Valid row: its number)\n"
        text += "\n\n"
        splits = [("Train", self.metrics.train), ("Valid", self.metrics.valid), *tests.items()]
        rows = [
            _row(split, metric) for split, metrics in splits for metric in metrics if metric.entries
        ]
        return text + table_text(rows, split_names=["Train", "Valid", *tests])


def _row(split: str, metric: MetricSummary) -> list[str]:
    """A metric's table cells: split, name, min and its epoch, max and its epoch."""
    low, high = metric.min, metric.max
    # An evaluation has no epochs: its one value shows in both columns, no epoch.
    steps = ("-", "-") if split.startswith("Test") else (str(low.step), str(high.step))
    return [split, metric.name, value_text(low.value), steps[0], value_text(high.value), steps[1]]


def _collect(
    store: MetricStore, names: list[str], split: Split, epochs: int, skip_unreadable: bool
) -> list[MetricSummary]:
    """The summaries of `names` on `split` that have values (unreadable ones left out with a
    warning when `skip_unreadable`, else raised)."""
    summaries = []
    for name in names:
        try:
            summary = MetricSummary.collect(store, name, split, epochs)
        except ValueError as error:
            if not skip_unreadable:
                raise
            if isinstance(error, DamagedLogError):  # not a text metric: say so
                log.warning("%s %s is left out of the summary: %s", split, name, error)
            summary = None
        if summary is not None:
            summaries.append(summary)
    return summaries


def _evaluation_loggers(directory: Path) -> dict[str, FileMetricLogger]:
    """The loggers of the evaluations under `<directory>/test/`, by name (sorted)."""
    root = directory / Split.TEST.value
    if not root.is_dir():
        return {}
    return {
        path.name: FileMetricLogger.new_eval(path)
        for path in sorted(root.iterdir())
        if path.is_dir() and any(path.glob("*.log"))
    }


def learner_summary(
    options: LearnerOptions,
    epochs: int | None = None,
    validations: int | None = None,
    logged: Iterable[str] = (),
) -> LearnerSummary | None:
    """The LearnerSummary of the run's file logs over epochs `1..epochs` (None: every epoch
    logged) and, with `valid_every`, validations `1..validations`, of its numeric metrics and
    the values its listeners `logged`; None without any or without files
    (`with_metric_logger` loggers that write none)."""
    from burnish.train.metric.base import Numeric

    names = {m.name for split in options.metrics.values() for m in split if isinstance(m, Numeric)}
    names |= set(logged)
    if not names:
        return None
    if options.validation.every is None:
        validations = None
    try:
        return LearnerSummary.from_dir(
            options.artifact_dir, sorted(names), epochs=epochs, validations=validations
        )
    except FileNotFoundError as error:
        log.warning("No summary: %s", error)
        return None

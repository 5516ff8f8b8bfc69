"""Burn main's renderer traits, and the adapter that drives a renderer written to them.

A Burn `MetricsRenderer` is `MetricsRendererTraining` (`update_train`, `update_valid`,
`on_train_end`) + `MetricsRendererEvaluation` (`update_test`, `on_test_end`) +
`TrainingProgressLogger` + `EvaluationProgressLogger` (see `burnish.train.logger.progress`) +
`manual_close` and `register_metric`. `.renderer(obj)` accepts such an object (a subclass of
these classes, or any object with the methods) and wraps it in `BurnMetricsRenderer`, which
turns burnish's renderer calls into Burn's; the same adapter feeds the progress loggers of
`with_progress_logger`. Burn ≤ 0.21's `render_train`/`render_valid`/`render_test(progress)`
are called too when the object has them. Values arrive at the renderer's pace (see
`logger/progress.py`); `on_train_end`/`on_test_end` receive None (burnish prints the summary).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

from burnish.train.interrupter import Interrupter
from burnish.train.metric.base import MetricEntry, NumericEntry
from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot, format_value
from burnish.train.split import Split

__all__ = [
    "BURN_RENDERER_METHODS",
    "BurnMetricsRenderer",
    "EvaluationName",
    "MetricDefinition",
    "MetricState",
    "MetricsRendererEvaluation",
    "MetricsRendererTraining",
    "as_metrics_renderer",
    "is_burn_renderer",
]

BURN_RENDERER_METHODS = (
    "update_train", "update_valid", "update_test", "update_split", "update_test_progress",
    "render_train", "render_valid", "render_test",
)  # fmt: skip
"""Methods that make an object a renderer written to Burn's traits (any one of them)."""


@dataclasses.dataclass(frozen=True)
class MetricDefinition:
    """A metric a renderer will be shown (Burn's `MetricDefinition`; the id is the name)."""

    name: str
    description: str | None = None

    @property
    def metric_id(self) -> str:
        """The metric's id: its name (unique within a run)."""
        return self.name


@dataclasses.dataclass(frozen=True)
class EvaluationName:
    """The name of an evaluation (Burn's `EvaluationName`)."""

    name: str

    def as_str(self) -> str:
        """The name."""
        return self.name

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class MetricState:
    """A metric's state at one update (Burn's `MetricState`): `MetricState.Generic(entry)` or
    `MetricState.Numeric(entry, numeric_entry)`.

    Attributes:
        entry: the metric's name and formatted text.
        numeric: the plottable value (`Numeric` only; None for `Generic`).
    """

    entry: MetricEntry
    numeric: NumericEntry | None = None

    @classmethod
    def Generic(cls, entry: MetricEntry) -> MetricState:
        """A text metric's state."""
        return cls(entry)

    @classmethod
    def Numeric(cls, entry: MetricEntry, numeric: NumericEntry | None) -> MetricState:
        """A numeric metric's state."""
        return cls(entry, numeric)

    @property
    def is_numeric(self) -> bool:
        """Whether this is a `Numeric` state."""
        return self.numeric is not None


class MetricsRendererTraining:
    """Burn's `MetricsRendererTraining` trait: metric states of training."""

    def update_train(self, state: MetricState) -> None:
        """A training metric's state."""
        raise NotImplementedError

    def update_valid(self, state: MetricState) -> None:
        """A validation metric's state."""
        raise NotImplementedError

    def on_train_end(self, summary: Any) -> None:
        """The training ended (completed or interrupted); prints `summary` if given."""
        if summary is not None:
            print(summary)


class MetricsRendererEvaluation:
    """Burn's `MetricsRendererEvaluation` trait: metric states of an evaluation."""

    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        """A metric's state in the evaluation `name`."""
        raise NotImplementedError

    def on_test_end(self, summary: Any) -> None:
        """The evaluation ended; prints `summary` if given."""
        if summary is not None:
            print(summary)


def is_burn_renderer(obj: object) -> bool:
    """Whether `obj` is written to Burn's renderer traits rather than burnish's interface."""
    if isinstance(obj, MetricsRenderer) and type(obj).render is not MetricsRenderer.render:
        return False
    return any(callable(getattr(obj, name, None)) for name in BURN_RENDERER_METHODS)


def _call(target: Any, method: str, *args: Any) -> None:
    function = getattr(target, method, None)
    if callable(function):
        function(*args)


class BurnMetricsRenderer(MetricsRenderer):
    """Drives objects written to Burn's traits from burnish's renderer calls.

    Args:
        targets: Burn-style renderers and progress loggers; each gets the Burn methods it has.
        inner: a burnish renderer driven as well (e.g. the default dashboard beside a progress
            logger); None: none.
        refresh_interval_s: without `inner`, how often the adapter is due.
        clock: the time source of `refresh_interval_s`.
    """

    def __init__(
        self,
        targets: Sequence[Any],
        inner: MetricsRenderer | None = None,
        refresh_interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.targets = list(targets)
        self.inner = inner
        self.refresh_interval_s = refresh_interval_s
        self._clock = clock
        self._next_due = 0.0
        self._fresh = True  # the first batch of a split is rendered: it carries its size
        self._num_epochs = 1
        self._started = False  # Burn's `start`/`start_global_progress` called
        self._testing: str | None = None  # the evaluation's name while evaluating
        self._open: str | None = None  # the split whose Burn `start_split` was called
        self._train_ended = 0  # the epoch whose train split ended (for `update_epoch`)
        self._registered: set[str] = set()
        self._closed = False

    def _each(self, method: str, *args: Any) -> None:
        for target in self.targets:
            _call(target, method, *args)

    # -- burnish's calls ---------------------------------------------------------------------

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Begin a training run; Burn's `start` follows at its first batch (its epoch)."""
        if self.inner is not None:
            self.inner.start(num_epochs, interrupter)
        self._num_epochs, self._fresh, self._closed = num_epochs, True, False

    def start_evaluation(self, num_tests: int) -> None:
        """Burn's `start_global_progress(total_tests)`."""
        if self.inner is not None:
            self.inner.start_evaluation(num_tests)
        self._each("start_global_progress", num_tests)
        self._started, self._closed = True, False

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Begin the data set `name`; Burn's `start_test` follows at its first batch."""
        if self.inner is not None:
            self.inner.start_test(name, interrupter)
        if not self._started:
            self.start_evaluation(1)
        self._testing, self._fresh, self._open = name, True, None

    def start_split(self, split: Split) -> None:
        """A split begins; Burn's `start_split` follows at its first batch (its size)."""
        if self.inner is not None:
            self.inner.start_split(split)
        self._fresh, self._open = True, None

    def due(self) -> bool:
        """At the first batch of each split, then at `inner`'s pace (else every interval)."""
        if self.inner is not None:
            due = self.inner.due()
        else:
            now = self._clock()
            due = now >= self._next_due
            if due:
                self._next_due = now + self.refresh_interval_s
        fresh, self._fresh = self._fresh, False
        return due or fresh

    def render(self, snapshot: RenderSnapshot) -> None:
        """Burn's `update_*` per metric, then `update_split`/`update_test_progress`."""
        if self.inner is not None:
            self.inner.render(snapshot)
        progress = snapshot.progress
        self._open_split(snapshot.split, progress.epoch, progress.items_total)
        for name, (current, running) in snapshot.numeric.items():
            text = f"epoch {format_value(running)} - batch {format_value(current)}"
            entry = MetricEntry(name, text, f"{current!r}")
            self._update(snapshot.split, name, MetricState.Numeric(entry, NumericEntry(current, 1)))
        for name, text in snapshot.text.items():
            self._update(snapshot.split, name, MetricState.Generic(MetricEntry(name, text, text)))
        if snapshot.split == Split.TEST:
            self._each("update_test_progress", progress.items_processed)
            self._each("render_test", progress)
            self._each("log_event_evaluation", "Iteration")
        else:
            self._each("update_split", progress.items_processed)
            self._each(f"render_{snapshot.split.value}", progress)
            self._each("log_event_training", "Iteration")

    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """The split's epoch values, then `end_split` (`end_test`) and, after a validation
        that closes a training epoch, `update_epoch(epoch)`."""
        if self.inner is not None:
            self.inner.end_epoch(split, epoch, values)
        split = Split.parse(split)
        self._open_split(split, epoch, 0)
        for name, value in values.items():
            entry = MetricEntry(name, f"epoch {format_value(value)}", f"{value!r}")
            self._update(split, name, MetricState.Numeric(entry, NumericEntry(value, 1)))
        self._open = None
        if split == Split.TEST:
            self._each("end_test")
            return
        self._each("end_split")
        if split == Split.TRAIN:
            self._train_ended = epoch
        elif self._train_ended == epoch:
            self._each("update_epoch", epoch)
            self._train_ended = 0

    def model_summary(self, summary: Any) -> None:
        """Forwarded to `inner`."""
        if self.inner is not None:
            self.inner.model_summary(summary)

    def message(self, text: str) -> None:
        """Forwarded to `inner`."""
        if self.inner is not None:
            self.inner.message(text)

    def close(self) -> None:
        """Burn's `end` + `on_train_end(None)`, or `end_global_progress` + `on_test_end(None)`."""
        if self.inner is not None:
            self.inner.close()
        if self._closed or not self._started:
            return
        self._closed, self._started = True, False
        if self._testing is not None:
            self._testing = None
            self._each("end_global_progress")
            self._each("on_test_end", None)
        else:
            self._each("end")
            self._each("on_train_end", None)

    def manual_close(self) -> None:
        """Burn's `manual_close` of each target (and of `inner`)."""
        if self.inner is not None:
            self.inner.manual_close()
        self._each("manual_close")

    # -- helpers -----------------------------------------------------------------------------

    def _open_split(self, split: Split, epoch: int, total_items: int) -> None:
        if split != Split.TEST and not self._started:
            self._each("start", self._num_epochs, epoch, None)
            self._started = True
        if self._open == split:
            return
        self._open = split
        if split == Split.TEST:
            self._each("start_test", self._testing or "test", total_items)
        else:
            self._each("start_split", split.value, total_items)

    def _update(self, split: Split, name: str, state: MetricState) -> None:
        if name not in self._registered:
            self._registered.add(name)
            self._each("register_metric", MetricDefinition(name))
        if split == Split.TEST:
            self._each("update_test", EvaluationName(self._testing or "test"), state)
        else:
            self._each(f"update_{split.value}", state)


def as_metrics_renderer(renderer: Any, progress_logger: Any = None) -> MetricsRenderer | None:
    """What the learner or evaluator drives: `renderer` itself (a burnish renderer, or None:
    the default), or `BurnMetricsRenderer` for a renderer written to Burn's traits and for a
    progress logger (beside `renderer`, or beside the default renderer).

    Raises:
        TypeError: if `renderer` is neither a burnish `MetricsRenderer` nor written to Burn's
            traits.
    """
    if not (renderer is None or isinstance(renderer, MetricsRenderer)) and not is_burn_renderer(
        renderer
    ):
        raise TypeError(
            "`renderer` takes a burnish.train.renderer.MetricsRenderer (start, due, render, "
            "end_epoch, close) or a renderer written to Burn's traits (update_train, "
            "update_valid, update_test, start_split, update_split, ...). Received: "
            f"{type(renderer).__name__}, which has neither method set."
        )
    progress = [] if progress_logger is None else [progress_logger]
    if renderer is not None and is_burn_renderer(renderer):
        return BurnMetricsRenderer([renderer, *progress])
    if progress:
        from burnish.train.renderer.default import default_renderer

        return BurnMetricsRenderer(progress, inner=renderer or default_renderer())
    return renderer

"""Burn main's `Evaluator`: a trained model's metrics on the test split.

`EvaluatorBuilder(directory).metrics(...).summary().build(model)` makes an `Evaluator`;
`evaluator.eval(name, dataloader)` runs the model's inference step over every batch of the
data loader on `model.valid()` (eval mode, no autograd, on the model's device), feeds the
metrics through the same `MetricsProcessor` as training (batched read-backs, the metric's own
epoch value) and writes the logs where Burn's `FileMetricLogger::new_eval` does:

    <directory>/test/<name>/<Metric>.log      one line per iteration, as in training
    <directory>/test/<name>/aggregates.json   each metric's value over the whole set
    <directory>/evaluation.log                the application log of the evaluation

`<name>` is the name given to `eval`, trimmed, spaces as `-`, lower case (Burn's tag): several
evaluations with different names sit side by side. Under torchrun every rank evaluates its
share of the data (unpadded: each item counts once), the metrics are summed over the ranks and
rank 0 writes.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from burnish.module import valid
from burnish.train.components.preemption import PreemptionSettings, PreemptionWatch
from burnish.train.interrupter import Interrupter
from burnish.train.logger.progress import EvaluationProgressLogger, check_progress_logger
from burnish.train.loop.artifact_dir import prepare_artifact_dir
from burnish.train.loop.batch_check import model_device
from burnish.train.loop.data_adapter import DataAdapter, check_has_batches
from burnish.train.loop.evaluation_loop import evaluate, stop_requested
from burnish.train.loop.evaluation_result import EvaluationResult, EvaluationResults, evaluation_tag
from burnish.train.loop.session import enter_directory
from burnish.train.metric.base import Metric, MetricMetadata, Numeric
from burnish.train.parallel.distributed import DistributedContext
from burnish.train.renderer.base import TrainingProgress
from burnish.train.renderer.burn_trait import as_metrics_renderer
from burnish.train.renderer.notebook import show_summary
from burnish.train.report.processor import MetricsProcessor, SplitMetrics
from burnish.train.split import Split
from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.train.logger import ApplicationLoggerInstaller, MetricLogger
    from burnish.train.renderer.base import MetricsRenderer
    from burnish.train.report.summary import LearnerSummary

__all__ = [
    "EvaluationResult",
    "EvaluationResults",
    "Evaluator",
    "EvaluatorBuilder",
    "evaluation_tag",
]

log = logging.getLogger("burnish.train")

_DEFAULT: Literal["default"] = "default"
EVALUATION_LOG = "evaluation.log"


class EvaluatorBuilder(ValueBuilder):
    """Configures an `Evaluator` (Burn main's `EvaluatorBuilder`); every method returns a new
    builder and leaves this one as it was.

    Example:
        >>> evaluator = (
        ...     EvaluatorBuilder("artifacts/mnist")
        ...     .metrics(AccuracyMetric(), LossMetric())
        ...     .summary()
        ...     .build(model)
        ... )  # doctest: +SKIP
        >>> result = evaluator.eval("mnist-test", dataloader_test)  # doctest: +SKIP
        >>> result.metrics["Accuracy"]  # doctest: +SKIP
        98.1

    Args:
        directory: where the logs go: `test/<name>/` and `evaluation.log`. The training run's
            artifact directory puts the test results beside the run's (`burnish summary` and
            `burnish report` then show them).
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self._directory = Path(directory)
        self._metrics: list[Metric] = []
        self._renderer: MetricsRenderer | Any = None
        self._progress_logger: EvaluationProgressLogger | Any = None
        self._application_logger: ApplicationLoggerInstaller | Literal["default"] | None = _DEFAULT
        self._summary = False
        self._interrupter = Interrupter()
        self._logger: MetricLogger | None = None

    def metrics(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register numeric metrics (Burn: `.metrics((a, b))`; a tuple or list, or the
        metrics one by one)."""
        from burnish.train.settings.metric_args import metrics_of

        new = self
        for metric in metrics_of(metrics):
            new = new.metric_numeric(metric)
        return new

    def metrics_text(self, *metrics: Metric | tuple[Metric, ...] | list[Metric]) -> Self:
        """Register text metrics (Burn: `.metrics_text((a, b))`; a tuple or list, or the
        metrics one by one)."""
        from burnish.train.settings.metric_args import metrics_of

        new = self
        for metric in metrics_of(metrics):
            new = new.metric(metric)
        return new

    def metric_numeric(self, metric: Metric) -> Self:
        """Register a numeric metric: logged per iteration, its value over the set returned."""
        if not isinstance(metric, Numeric):
            raise TypeError(
                f"`metric_numeric` takes a Numeric metric; {type(metric).__name__} is not one. "
                "Register it with `metric(...)` instead."
            )
        return self._add(metric)

    def metric(self, metric: Metric) -> Self:
        """Register a metric shown as text in the dashboard and logged as text."""
        return self._add(metric)

    def _add(self, metric: Metric) -> Self:
        if not isinstance(metric, Metric):
            raise TypeError(
                f"Metrics must implement burnish.train.metric.Metric. Received: {metric!r}."
            )
        if any(m.name == metric.name for m in self._metrics):
            raise ValueError(
                f"A metric named {metric.name!r} is already registered; each name is a log "
                "file, so register each metric once."
            )
        return self._replace(_metrics=[*self._metrics, metric])

    def renderer(self, renderer: MetricsRenderer | Any) -> Self:
        """Use this renderer instead of the default (TUI in a terminal, else CLI): a burnish
        `MetricsRenderer` or one written to Burn's traits (`update_test`, ...)."""
        as_metrics_renderer(renderer)  # a TypeError now for an object of neither kind
        return self._replace(_renderer=renderer)

    def with_progress_logger(self, logger: EvaluationProgressLogger | Any) -> Self:
        """Tell `logger` where the evaluation is (Burn main's `EvaluationProgressLogger`:
        `start_global_progress`, `start_test`, `update_test_progress`, `end_test`,
        `end_global_progress`), beside the renderer.

        Raises:
            TypeError: if `logger` has no `update_test_progress` method.
        """
        check_progress_logger(logger, "update_test_progress")
        return self._replace(_progress_logger=logger)

    def with_metric_logger(self, logger: MetricLogger) -> Self:
        """Log to `logger` instead of the files of `test/<name>/` (one logger for every eval)."""
        return self._replace(_logger=logger)

    def with_application_logger(self, installer: ApplicationLoggerInstaller | None) -> Self:
        """Install this application logger (default: `<directory>/evaluation.log`; None:
        leave Python logging alone)."""
        return self._replace(_application_logger=installer)

    def with_interrupter(self, interrupter: Interrupter) -> Self:
        """Use a given interrupter: `.stop()` on it ends an evaluation after the current batch."""
        return self._replace(_interrupter=interrupter)

    def summary(self) -> Self:
        """Print the summary table (with the test rows) after each `eval`."""
        return self._replace(_summary=True)

    def build(self, model: nn.Module) -> Evaluator:
        """The `Evaluator` of `model`: it runs `test_step` if the model has one, else
        `valid_step` (Burn's `InferenceStep`).

        Raises:
            TypeError: if the model has neither.
            ValueError: if no metric is registered.
        """
        _inference_step_name(model)
        if not self._metrics:
            raise ValueError(
                "The evaluator has no metrics: register them with `.metrics(AccuracyMetric(), "
                "LossMetric())` before `build`."
            )
        installer = self._application_logger
        if installer == _DEFAULT:
            from burnish.train.logger import FileApplicationLoggerInstaller

            installer = FileApplicationLoggerInstaller(self._directory / EVALUATION_LOG)
        return Evaluator(
            model,
            self._directory,
            list(self._metrics),
            renderer=as_metrics_renderer(self._renderer, self._progress_logger),
            application_logger=installer,
            summary=self._summary,
            interrupter=self._interrupter,
            logger=self._logger,
        )


class Evaluator:
    """Runs a model's inference step over data sets and logs their metrics (Burn main's
    `Evaluator`). Made by `EvaluatorBuilder.build`; `eval` may be called once per data set.

    Args:
        model: the trained model.
        directory: where the logs go.
        metrics: the metrics, cleared before each evaluation.
        renderer: the dashboard; None: the default one for the terminal.
        application_logger: installed during each evaluation; None: logging untouched.
        summary: print the summary table after each evaluation.
        interrupter: receives stop requests.
        logger: a metric logger in place of the files; None: Burn's layout under `directory`.
    """

    def __init__(
        self,
        model: nn.Module,
        directory: Path,
        metrics: list[Metric],
        *,
        renderer: MetricsRenderer | None = None,
        application_logger: ApplicationLoggerInstaller | None = None,
        summary: bool = False,
        interrupter: Interrupter | None = None,
        logger: MetricLogger | None = None,
    ) -> None:
        self.model = model
        self.directory = directory
        self.metrics = metrics
        self.renderer = renderer
        self.application_logger = application_logger
        self.show_summary = summary
        self.interrupter = interrupter or Interrupter()
        self.logger = logger

    def eval(self, name: str, dataloader: Any) -> EvaluationResult:
        """Evaluate the model on `dataloader`; logs go to `<directory>/test/<name>/`.

        Evaluating again under the same name replaces that name's logs.

        Args:
            name: the data set's name, e.g. `"mnist-test"` (its directory: see
                `evaluation_tag`).
            dataloader: a burnish or torch data loader whose batches the model's step takes.

        Returns:
            The metrics' values over the whole data set.

        Raises:
            ValueError: for a name that cannot be a directory, or a data loader without
                batches.
            RunLockedError: if a training run is writing in the directory.
        """
        [result] = self.eval_all([(name, dataloader)])
        return result

    def eval_all(
        self, datasets: Iterable[tuple[str, Any]] | Mapping[str, Any]
    ) -> EvaluationResults:
        """Evaluate the model on several named data loaders in turn (Burn's `eval_all`).

        Args:
            datasets: `(name, dataloader)` pairs, or a mapping from name to data loader.

        Returns:
            One result per data set, in order; a stop request ends the evaluations there.

        Raises:
            TypeError: if an entry is not a `(name, dataloader)` pair.
        """
        if isinstance(datasets, Mapping):
            datasets = datasets.items()
        pairs = list(datasets)
        for pair in pairs:
            if not isinstance(pair, tuple) or len(pair) != 2:
                raise TypeError(
                    "`eval_all` takes (name, dataloader) pairs or a {name: dataloader} "
                    f"mapping. Received the entry {pair!r}. Write e.g. "
                    "`eval_all([('mnist-test', loader)])`."
                )
        named = [(name, evaluation_tag(name), loader) for name, loader in pairs]
        for name, _, loader in named:  # len() only, before anything is written
            check_has_batches(loader, "test", name)
        self.interrupter.reset()  # a stop request ended an earlier evaluation, not this one
        context = DistributedContext.detect(model_device(self.model))
        if context.device is not None:
            self.model.to(context.device)
        prepare_artifact_dir(self.directory, context)
        results = EvaluationResults()
        watch = PreemptionWatch(PreemptionSettings(), self.interrupter)  # SIGTERM
        with self._session(context), watch.catch():
            self._renderer.start_evaluation(len(named))
            for name, tag, loader in named:
                results.append(self._eval(context, name, tag, loader))
                if self.interrupter.should_stop():
                    break
            watch.end_evaluation(context, results)  # raises `Preempted` after a signal
        results.renderer = self._renderer
        if self.show_summary and context.is_main:
            summary = self.summary()
            if summary is not None:
                show_summary(summary)  # a table in a notebook
        return results

    def summary(self) -> LearnerSummary | None:
        """The summary table of the directory (the run's rows and the test rows); None if
        there are no logs to summarise."""
        from burnish.train.report.summary import LearnerSummary

        names = sorted({m.name for m in self.metrics if isinstance(m, Numeric)})
        try:
            return LearnerSummary.from_dir(self.directory, names)
        except FileNotFoundError as error:
            log.warning("No summary: %s", error)
            return None

    def _eval(
        self, context: DistributedContext, name: str, tag: str, loader: Any
    ) -> EvaluationResult:
        directory = self.directory / Split.TEST.value / tag
        processor = MetricsProcessor(
            [SplitMetrics(Split.TEST, self.metrics, self._metric_logger(context, directory))],
            self._renderer,
            reduce=context.reducer(),
            rank=context.rank,
        )
        adapter = context.place_loader(loader, pad=False)  # each item counts once
        step_name = _inference_step_name(self.model)
        step = getattr(valid(self.model), step_name)
        log.info("Evaluating %r (%s): logs in %s.", name, type(self.model).__name__, directory)
        self._renderer.start_test(name, self.interrupter)
        processor.clear(Split.TEST)

        def process(item: Any, iteration: int) -> None:
            processor.process(Split.TEST, item, *_metadata(adapter, iteration))

        def stop(iteration: int) -> bool:
            return stop_requested(self.interrupter, context, iteration, processor.sync_every)

        iteration, interrupted = evaluate(
            adapter, step, self.model, Split.TEST, process, stop, step_name=step_name, name=name
        )
        values = processor.end_epoch(Split.TEST, 1)
        items = _items(adapter, iteration, context)
        shown = " | ".join(f"{k} {v:.4g}" for k, v in values.items())
        log.info("Evaluation %r on %d items: %s", name, items, shown or "no numeric metric")
        result = EvaluationResult(name, values, directory, items, interrupted)
        object.__setattr__(result, "_renderer", self._renderer)  # frozen: set once, here
        return result

    def _metric_logger(self, context: DistributedContext, directory: Path) -> MetricLogger:
        from burnish.train.logger import FileMetricLogger, InMemoryMetricLogger

        if not context.is_main:
            return InMemoryMetricLogger()
        if self.logger is not None:
            return self.logger
        return FileMetricLogger.new_eval(directory)

    @contextlib.contextmanager
    def _session(self, context: DistributedContext) -> Iterator[None]:
        from burnish.train.renderer import NullRenderer, default_renderer

        with contextlib.ExitStack() as stack:
            enter_directory(stack, context, self.directory, self.application_logger)
            stack.enter_context(self.interrupter.catch_sigint())
            if context.is_main:
                self._renderer = self.renderer or default_renderer()
            else:
                self._renderer = NullRenderer()
            stack.callback(self._renderer.close)
            yield


def _inference_step_name(model: nn.Module) -> str:
    """`test_step` if the model has one, else `valid_step`."""
    for method in ("test_step", "valid_step"):
        if callable(getattr(model, method, None)):
            return method
    raise TypeError(
        f"The model {type(model).__name__} has no `valid_step(batch)` (Burn's InferenceStep) "
        "or `test_step(batch)` method: implement one, returning the item the metrics read "
        "(e.g. ClassificationOutput), to evaluate it."
    )


def _metadata(adapter: DataAdapter, iteration: int) -> tuple[MetricMetadata, TrainingProgress]:
    progress = adapter.progress(iteration)
    metadata = MetricMetadata(progress, 1, 1, iteration, None)
    return metadata, TrainingProgress(
        1, 1, iteration, progress.items_processed, progress.items_total
    )


def _items(adapter: DataAdapter, iteration: int, context: DistributedContext) -> int:
    """Items evaluated, over every rank."""
    items = adapter.progress(iteration).items_processed if iteration else 0
    reduce = context.reducer()
    if reduce is None:
        return items
    return int(reduce(torch.tensor([float(items)], dtype=torch.float64))[0])

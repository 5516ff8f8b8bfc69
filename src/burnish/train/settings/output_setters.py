"""`OutputSetters`: where the run's metrics, progress and records go (renderer, metric
loggers, experiment trackers, listeners, experiment log, summary)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from burnish.train.logger.progress import check_progress_logger
from burnish.train.settings.setters import Setters
from burnish.train.split import Split

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.train.components.listener import TrainingListener
    from burnish.train.logger import ApplicationLoggerInstaller, MetricLogger
    from burnish.train.logger.progress import TrainingProgressLogger
    from burnish.train.logger.tracker import ExperimentLogger
    from burnish.train.renderer.base import MetricsRenderer

__all__ = ["OutputSetters"]


class OutputSetters(Setters):
    """The output setters of `TrainingBuilder`."""

    def renderer(self, renderer: MetricsRenderer | Any) -> Self:
        """Use this renderer instead of the default (TUI in a terminal, else CLI): a burnish
        `MetricsRenderer`, or one written to Burn's traits (`update_train`, `update_split`, ...;
        see `burnish.train.renderer.burn_trait`)."""
        from burnish.train.renderer.burn_trait import as_metrics_renderer

        as_metrics_renderer(renderer)  # a TypeError now for an object of neither kind
        return self._set("logging", renderer=renderer)

    def with_progress_logger(self, logger: TrainingProgressLogger | Any) -> Self:
        """Tell `logger` where the run is (Burn main's `TrainingProgressLogger`: `start`,
        `start_split`, `update_split`, `end_split`, `update_epoch`, `end`), beside the renderer.

        Raises:
            TypeError: if `logger` has none of those methods.
        """
        check_progress_logger(logger, "update_split")
        return self._set("logging", progress_logger=logger)

    def with_metric_logger(self, logger: MetricLogger, valid: MetricLogger | None = None) -> Self:
        """Log metric values to `logger` instead of the files of `train/` and `valid/`.

        Burn main's form, `with_metric_logger(InMemoryMetricLogger())`, gives one logger every
        split (it keeps them apart through `logger.for_split(split)`); the seeds' form,
        `with_metric_logger(train_logger, valid_logger)`, gives one per split.

        Raises:
            TypeError: if a logger is not a `MetricLogger`, or one logger cannot serve both
                splits (see `MetricLogger.for_split`).
        """
        from burnish.train.logger import MetricLogger

        for given in (logger, valid):
            if given is not None and not isinstance(given, MetricLogger):
                raise TypeError(
                    "`with_metric_logger` takes burnish.train.logger.MetricLogger instances "
                    f"(e.g. InMemoryMetricLogger()). Received: {type(given).__name__}."
                )
        if valid is None:
            loggers = {s: logger.for_split(s) for s in (Split.TRAIN, Split.VALID)}
            return self._set("logging", loggers=loggers)
        return self._set("logging", loggers={Split.TRAIN: logger, Split.VALID: valid})

    def log_to(self, *loggers: ExperimentLogger, config: Any = None) -> Self:
        """Also send the run to experiment trackers, beside Burn's file logs (rank 0 only).

        Each tracker gets every numeric metric of both splits per epoch, the batch values of
        every `log_every(k)`-th iteration (default 50), the learning rate (as `lr`, unless a
        `LearningRateMetric` logs it), `config` and the learner's settings as parameters, and
        the summary at the end. A resumed run continues each tracker's run
        without duplicating or losing points. `with_metric_logger` still replaces the file
        logs; `log_to` adds to them and may be called several times.

        Example:
            >>> builder.log_to(TensorBoardLogger("runs/mnist"), CsvLogger("metrics.csv"),
            ...                config=training_config)  # doctest: +SKIP

        Args:
            *loggers: `ExperimentLogger`s such as `TensorBoardLogger`, `CsvLogger`,
                `MlflowLogger`, `WandbLogger`.
            config: the run's config (a `@bn.config` instance, a dataclass or a mapping),
                recorded as the trackers' parameters.

        Raises:
            TypeError: if a logger is not an `ExperimentLogger`.
        """
        from burnish.train.logger.tracker import ExperimentLogger

        for logger in loggers:
            if not isinstance(logger, ExperimentLogger):
                raise TypeError(
                    "`log_to` takes ExperimentLoggers (TensorBoardLogger, CsvLogger, "
                    f"MlflowLogger, WandbLogger). Received: {logger!r}. A MetricLogger "
                    "replaces the file logs: pass it to `with_metric_logger`."
                )
        tracking = self._settings.tracking
        config = tracking.config if config is None else config
        return self._set("tracking", trackers=(*tracking.trackers, *loggers), config=config)

    def log_every(self, iterations: int) -> Self:
        """Give the trackers (`log_to`) iteration values every `iterations` iterations.

        Training iterations are logged when the global step (training iterations since the
        run began) is a multiple of `iterations`, validation iterations when their number in
        the epoch is. The points are the same whatever the speed of the run and across a
        resume; the values come with the processor's batched read-backs, at no extra host
        sync. Default 50 (Lightning's `log_every_n_steps`). Burn's file logs keep every
        iteration.
        """
        return self._set("tracking", log_every=iterations)

    def with_listener(self, listener: TrainingListener) -> Self:
        """Call `listener` at the run's moments: fit start, each iteration's end, each epoch's
        and validation's end, each checkpoint, fit end (see `TrainingListener`).

        Listeners run in the order they were added, on rank 0 unless their class sets
        `all_ranks = True`. Their events carry metric values the learner already read back: a
        listener adds no host sync. One may stop the run (`event.stop(reason)`); one with
        `to_record`/`load_record` is checkpointed and resumes exactly. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder, TrainingListener
            >>> class PrintEpochs(TrainingListener):
            ...     def on_epoch_end(self, event):
            ...         print(event.epoch, dict(event.values))
            >>> builder = LearnerBuilder("artifacts").with_listener(PrintEpochs())

        Raises:
            TypeError: if `listener` is not a `TrainingListener`, or has only one of
                `to_record` and `load_record`.
        """
        from burnish.train.components.listener import TrainingListener

        if not isinstance(listener, TrainingListener):
            raise TypeError(
                "`with_listener` takes a burnish.train.TrainingListener. Received: "
                f"{listener!r}. Subclass TrainingListener and override the methods you need "
                "(on_iteration_end, on_epoch_end, ...)."
            )
        has = [
            name for name in ("to_record", "load_record") if callable(getattr(listener, name, None))
        ]
        if len(has) == 1:
            missing = "load_record" if has == ["to_record"] else "to_record"
            raise TypeError(
                f"The listener {type(listener).__name__} has `{has[0]}` but no `{missing}`: "
                "a checkpointed listener needs both (its state goes into each checkpoint and "
                f"comes back on resume). Add `{missing}`, or remove `{has[0]}`."
            )
        return self._with(listeners=(*self._settings.listeners, listener))

    def with_application_logger(self, installer: ApplicationLoggerInstaller | None) -> Self:
        """Install this application logger (None: leave Python logging alone)."""
        return self._set("logging", application_logger=installer)

    def summary(self) -> Self:
        """Print the LearnerSummary table when `fit` ends."""
        return self._set("logging", summary=True)

    def profile(
        self,
        steps: Iterable[int] = range(10, 20),
        *,
        record_shapes: bool = False,
        with_stack: bool = False,
        memory: bool = False,
    ) -> Self:
        """Profile global training steps `steps` with `torch.profiler` (rank 0).

        Steps count training iterations from the run's first (step 1), a resume continuing
        the count; `steps` is one window of consecutive steps, and the step before it warms
        the profiler up. When the window ends, `<artifact_dir>/profile/` gets `trace.json` (a
        Chrome trace: chrome://tracing or ui.perfetto.dev) and the same trace as
        `*.pt.trace.json` for TensorBoard's PyTorch profiler plugin (`tensorboard --logdir
        <artifact_dir>`), and `experiment.log` the top 10 operations by self time. CPU
        activity is recorded, and CUDA's when the model is on a GPU. Outside the window a fit
        pays nothing. See docs/performance.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").profile(steps=range(10, 20))

        Args:
            steps: the global training steps to profile (default 10 to 19).
            record_shapes: record the operators' input shapes.
            with_stack: record the Python stack of each operator (a larger trace).
            memory: record tensor allocations and frees (`profile_memory`).

        Raises:
            TypeError: if `steps` is not an iterable of integers, or a flag not a bool.
            ValueError: if `steps` is empty, not consecutive, or holds a step < 1.
        """
        from burnish.train.components.profiler import profile_settings

        settings = profile_settings(steps, record_shapes, with_stack, memory)
        return self._set("logging", profiling=settings)

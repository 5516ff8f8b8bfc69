"""`LearnerBuilder`: Burn's builder for the training loop, method for method.

Example:
    >>> learner = (
    ...     LearnerBuilder("artifacts")
    ...     .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
    ...     .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
    ...     .with_file_checkpointer(CompactRecorder())
    ...     .num_epochs(10).summary()
    ...     .build(model, AdamConfig().init(), 1e-4)
    ... )  # doctest: +SKIP
    >>> result = learner.fit(dataloader_train, dataloader_valid)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from burnish.backend import device as parse_device
from burnish.train.interrupter import Interrupter
from burnish.train.options import LearnerOptions

__all__ = ["LearnerBuilder"]


class LearnerBuilder:
    """Configures and builds a `Learner`; every method returns the builder.

    Args:
        artifact_dir: where `experiment.log`, metric logs (`train/`, `valid/`) and
            `checkpoint/` are written.
    """

    def __init__(self, artifact_dir: str | os.PathLike) -> None:
        self._artifact_dir = Path(artifact_dir)
        self._metrics: dict[str, list[Any]] = {"train": [], "valid": []}
        self._num_epochs = 1
        self._interrupter = Interrupter()
        self._recorder: Any = None
        self._strategy: Any = None
        self._resume_from: int | str | None = None
        self._early_stopping: Any = None
        self._grads_accumulation: int | None = None
        self._devices: list[torch.device] = []
        self._renderer: Any = None
        self._loggers: dict[str, Any] | None = None
        self._application_logger: Any = "default"
        self._summary = False
        self._checkpoint_every: int | None = None
        self._deterministic = False
        self._compile: dict[str, Any] | None = None

    # -- metrics ---------------------------------------------------------------------------

    def metric_train_numeric(self, metric: Any) -> LearnerBuilder:
        """Register a numeric training metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric("train", metric, numeric=True)

    def metric_valid_numeric(self, metric: Any) -> LearnerBuilder:
        """Register a numeric validation metric: logged per epoch, plotted in the dashboard."""
        return self._add_metric("valid", metric, numeric=True)

    def metric_train(self, metric: Any) -> LearnerBuilder:
        """Register a training metric shown as text in the dashboard."""
        return self._add_metric("train", metric, numeric=False)

    def metric_valid(self, metric: Any) -> LearnerBuilder:
        """Register a validation metric shown as text in the dashboard."""
        return self._add_metric("valid", metric, numeric=False)

    def _add_metric(self, split: str, metric: Any, numeric: bool) -> LearnerBuilder:
        from burnish.train.metric.base import Metric, Numeric

        if not isinstance(metric, Metric):
            raise TypeError(
                f"Metrics must implement burnish.train.metric.Metric. Received: {metric!r}."
            )
        if numeric and not isinstance(metric, Numeric):
            raise TypeError(
                f"`metric_{split}_numeric` takes a Numeric metric; {type(metric).__name__} is "
                f"not one. Register it with `metric_{split}(...)` instead."
            )
        if any(m.name == metric.name for m in self._metrics[split]):
            raise ValueError(
                f"A {split} metric named {metric.name!r} is already registered; each name "
                "is a log file, so register each metric once per split."
            )
        self._metrics[split].append(metric)
        return self

    # -- loop ------------------------------------------------------------------------------

    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        """How many epochs to train (1-based, inclusive)."""
        _require_positive("num_epochs", num_epochs)
        self._num_epochs = num_epochs
        return self

    def devices(self, devices: list[Any]) -> LearnerBuilder:
        """The devices to train on; data loaders are moved to the first one."""
        if not devices:
            raise ValueError("`devices` must name at least one device. Received: [].")
        self._devices = [parse_device(d) for d in devices]
        if len(self._devices) > 1:
            raise ValueError(
                f"Training on several devices ({len(self._devices)} given) runs one process per "
                "device under torch.distributed: launch the script with "
                "`torchrun --nproc_per_node=N` and pass one device per process."
            )
        return self

    def grads_accumulation(self, accumulation: int) -> LearnerBuilder:
        """Step the optimizer once every `accumulation` iterations with summed gradients."""
        _require_positive("grads_accumulation", accumulation)
        self._grads_accumulation = accumulation
        return self

    def interrupter(self) -> Interrupter:
        """The interrupter of this run: call `.stop()` on it to stop after the current step."""
        return self._interrupter

    def with_interrupter(self, interrupter: Interrupter) -> LearnerBuilder:
        """Use a given interrupter (e.g. shared with a UI)."""
        self._interrupter = interrupter
        return self

    def early_stopping(self, strategy: Any) -> LearnerBuilder:
        """Stop when `strategy.should_stop(epoch, store)` says so (after each epoch)."""
        self._early_stopping = strategy
        return self

    def deterministic(self, enabled: bool = True) -> LearnerBuilder:
        """Use torch's deterministic algorithms during `fit` (with `bn.seed`: repeatable runs)."""
        self._deterministic = enabled
        if enabled:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        return self

    def compile(self, **options: Any) -> LearnerBuilder:
        """Run the model's `forward` through `torch.compile(**options)` during `fit`.

        Opt-in: compilation takes seconds to minutes up front and pays off on long runs and on
        GPUs; results match eager execution within float tolerance (see BENCHMARKS.md).
        """
        self._compile = dict(options)
        return self

    # -- checkpoints -----------------------------------------------------------------------

    def with_file_checkpointer(self, recorder: Any) -> LearnerBuilder:
        """Save model, optimizer, scheduler and loop state under `checkpoint/` each epoch."""
        self._recorder = recorder
        return self

    def with_checkpointing_strategy(self, strategy: Any) -> LearnerBuilder:
        """Which epoch checkpoints to keep (default: last 2 + best valid loss)."""
        self._strategy = strategy
        return self

    def checkpoint(self, epoch: int | str) -> LearnerBuilder:
        """Resume from the checkpoint of `epoch`, or `"latest"` (fails if there is none)."""
        if epoch != "latest":
            _require_positive("checkpoint", epoch)
        self._resume_from = epoch
        return self

    def resume(self) -> LearnerBuilder:
        """Continue from the newest complete checkpoint, exactly; start fresh if there is none."""
        self._resume_from = "auto"
        return self

    def checkpoint_every(self, iterations: int) -> LearnerBuilder:
        """Also commit a checkpoint every `iterations` training iterations (crash safety)."""
        _require_positive("checkpoint_every", iterations)
        self._checkpoint_every = iterations
        return self

    # -- output ----------------------------------------------------------------------------

    def renderer(self, renderer: Any) -> LearnerBuilder:
        """Use this `MetricsRenderer` instead of the default (TUI in a terminal, else CLI)."""
        self._renderer = renderer
        return self

    def with_metric_logger(self, train: Any, valid: Any) -> LearnerBuilder:
        """Use these metric loggers for the train and valid splits instead of files."""
        self._loggers = {"train": train, "valid": valid}
        return self

    def with_application_logger(self, installer: Any) -> LearnerBuilder:
        """Install this application logger (None: leave Python logging alone)."""
        self._application_logger = installer
        return self

    def summary(self) -> LearnerBuilder:
        """Print the LearnerSummary table when `fit` ends."""
        self._summary = True
        return self

    # -- build -----------------------------------------------------------------------------

    def build(
        self,
        model: Any,
        optim: Any,
        lr_scheduler: Any,
        dataloader_train: Any = None,
        dataloader_valid: Any = None,
    ) -> Any:
        """Create the `Learner`. `lr_scheduler` may be a float (a constant learning rate).

        Raises:
            ValueError: when the configuration cannot work (see the message for the fix).
        """
        from burnish.lr_scheduler import as_scheduler
        from burnish.train.learner import Learner

        options = self._options()
        if self._devices:
            model = model.to(self._devices[0])
        return Learner(
            model, optim, as_scheduler(lr_scheduler), options, dataloader_train, dataloader_valid
        )

    def _options(self) -> LearnerOptions:
        from burnish.train.checkpoint import default_checkpointing_strategy
        from burnish.train.checkpoint.file import FileCheckpointer

        checkpointer = None
        if self._recorder is not None:
            checkpointer = FileCheckpointer(self._artifact_dir / "checkpoint", self._recorder)
        elif self._resume_from is not None or self._checkpoint_every is not None:
            raise ValueError(
                "`checkpoint(...)`, `resume()` and `checkpoint_every(...)` need checkpoints: "
                "add `.with_file_checkpointer(recorder)` to the builder."
            )
        strategy = self._strategy or default_checkpointing_strategy()
        self._check_strategy_metrics(strategy, checkpointer is not None)
        return LearnerOptions(
            artifact_dir=self._artifact_dir,
            num_epochs=self._num_epochs,
            metrics={k: list(v) for k, v in self._metrics.items()},
            loggers=self._loggers or self._file_loggers(),
            renderer=self._renderer or _default_renderer(),
            interrupter=self._interrupter,
            checkpointer=checkpointer,
            checkpointing_strategy=strategy,
            resume_from=self._resume_from,
            early_stopping=self._early_stopping,
            grads_accumulation=self._grads_accumulation,
            devices=list(self._devices),
            application_logger=self._installer(),
            summary=self._summary,
            checkpoint_every=self._checkpoint_every,
            deterministic=self._deterministic,
            compile=self._compile,
        )

    def _file_loggers(self) -> dict[str, Any]:
        from burnish.train.logger import FileMetricLogger

        return {s: FileMetricLogger(self._artifact_dir / s) for s in ("train", "valid")}

    def _installer(self) -> Any:
        if self._application_logger != "default":
            return self._application_logger
        from burnish.train.logger import FileApplicationLoggerInstaller

        return FileApplicationLoggerInstaller(self._artifact_dir / "experiment.log")

    def _check_strategy_metrics(self, strategy: Any, checkpointing: bool) -> None:
        """A strategy watching a metric that is not registered fails now, not after epoch 1.

        The default checkpointing strategy is exempt: without a valid `Loss` it keeps the last 2.
        """
        watched = [("early_stopping", self._early_stopping)]
        if checkpointing and self._strategy is not None:
            watched.append(("with_checkpointing_strategy", strategy))
        for owner, part in watched:
            for name, split in _watched_metrics(part):
                names = [m.name for m in self._metrics[split]]
                if name not in names:
                    raise ValueError(
                        f"`{owner}` watches the {split} metric {name!r}, but no {split} metric "
                        f"of that name is registered (registered: {names}). Add it with "
                        f"`metric_{split}_numeric(...)`."
                    )


def _watched_metrics(part: Any) -> list[tuple[str, str]]:
    """(metric name, split) pairs a checkpointing or early-stopping strategy reads."""
    if part is None:
        return []
    found = []
    for inner in getattr(part, "strategies", None) or [part]:
        name = getattr(inner, "metric_name", None) or getattr(inner, "name", None)
        split = getattr(inner, "split", None)
        if isinstance(name, str) and split is not None:
            found.append((name, getattr(split, "value", split)))
    return found


def _default_renderer() -> Any:
    from burnish.train.renderer import default_renderer

    return default_renderer()


def _require_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1. Received: {name}={value!r}.")

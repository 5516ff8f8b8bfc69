"""Experiment trackers: where a run's metrics go besides Burn's file logs (TensorBoard, CSV,
MLflow, Weights & Biases).

An `ExperimentLogger` receives, on rank 0 only:

1. `start(run)` once, before the first iteration: the artifact directory, the user's config,
   the learner's hyper-parameters and, when the run resumes from a checkpoint, the position it
   resumes at (`ResumePosition`). A tracker drops (or leaves behind, in a run it no longer
   continues) every point the interrupted run logged after that position: the resumed run logs
   them again, maybe with other values (after a stop for a non-finite loss or an error), so
   its points replace them, neither duplicated nor lost.
2. `log_iteration(...)` at a fixed cadence (`LearnerBuilder.log_every(k)`, default 50 global
   steps), with the batch values of the split's numeric metrics. Trackers that only want epochs
   ignore it.
3. `log_epoch(...)` at the end of each epoch of each split, with the epoch values.
4. `flush()` before each checkpoint is committed: what was logged so far must survive a crash
   from then on.
5. `finish(summary, model_path)` when training ends normally, then `close()` (also after a
   failure or an interruption; safe to call twice).

Epoch values are plotted against the epoch; iteration values against the global training step
(iterations since the run began), so both axes stay increasing across a resume.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from burnish.train.split import Split

__all__ = [
    "ExperimentLogger",
    "ResumePosition",
    "RunInfo",
    "flatten_config",
    "import_extra",
]


LR_NAME = "lr"  # the learning rate's name among a split's metrics, in every tracker
ITERATION_GROUP = "iteration"  # iteration values: `iteration/<split>/<Metric>`


def _check_count(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"`{name}` must be an int >= {minimum}. Received: {name}={value!r}.")
    return value


@dataclasses.dataclass(frozen=True)
class ResumePosition:
    """Where a resumed run continues: what the interrupted run logged up to here is kept.

    The learner builds it from the checkpoint it resumed from. After an epoch checkpoint of
    epoch `e` it is `ResumePosition(e + 1, 0, step)`; after a mid-epoch checkpoint it is the
    epoch and the training iterations already done in it.

    Attributes:
        epoch: The epoch the run continues in (1-based).
        iteration: Training iterations of `epoch` already done (0: the epoch starts over).
        step: Training iterations done since the run began (the global step at the point).
        train_ended: Whether `epoch`'s train split had ended (its epoch values are kept; only
            validation is redone).
        validations: For a run that validates inside its epochs (`valid_every`), whose valid
            epoch N is its N-th validation: the validations done before the resume point
            (their values are kept); None: the valid split's epochs are the training epochs.
    """

    epoch: int
    iteration: int = 0
    step: int = 0
    train_ended: bool = False
    validations: int | None = None

    def __post_init__(self) -> None:
        _check_count("epoch", self.epoch, 1)
        _check_count("iteration", self.iteration, 0)
        _check_count("step", self.step, 0)
        if self.validations is not None:
            _check_count("validations", self.validations, 0)

    def keeps_epoch(self, split: str, epoch: int) -> bool:
        """Whether the epoch value of `split` for `epoch` was final before the resume point."""
        if split == Split.VALID and self.validations is not None:
            return epoch <= self.validations
        if epoch < self.epoch:
            return True
        return epoch == self.epoch and split == Split.TRAIN and self.train_ended

    def keeps_iteration(self, split: str, epoch: int, iteration: int) -> bool:
        """Whether iteration `iteration` of `split` in `epoch` happened before the resume point.

        Validation is always redone in full, so its iterations of `epoch` are never kept.
        """
        if split == Split.VALID and self.validations is not None:
            return epoch <= self.validations
        if epoch < self.epoch:
            return True
        return epoch == self.epoch and split == Split.TRAIN and iteration <= self.iteration

    def keeps_step(self, step: int) -> bool:
        """Whether global training step `step` happened before the resume point."""
        return step <= self.step

    def to_dict(self) -> dict[str, Any]:
        """The position as a plain dict (`epoch`, `iteration`, `step`, `train_ended`,
        `validations`)."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class RunInfo:
    """What a tracker is told when the run starts.

    Attributes:
        artifact_dir: The learner's artifact directory (trackers may keep files there).
        config: The user's config: a `@burnish.config` instance, a dataclass or a (nested)
            mapping; None if the user gave none. Trackers record `params()`.
        hparams: The learner's own settings (epochs, devices, ...) as flat scalar values.
        resume: Where a resumed run continues; None for a fresh start (a tracker then
            replaces what an earlier run left in its place).
        branch: With `resume`, the line the run writes when it is not the run's first: the
            branch's name (`"line 1 from epoch-2"`), whether this start began the branch or
            continues it. A tracker whose run records another line (a kill may have cut the
            branch's first start short before the trackers heard of it) treats the start as
            the branch's: trackers that cannot drop points (MLflow, W&B) start a new run
            linked to the earlier one, holding the points `resume` keeps. None: line 0.
        warn: Warns the user with a line (console and experiment log); None: the log only.
        say: Tells the user a line about expected behaviour (console and experiment log, not
            as a warning); None: the log only.
    """

    artifact_dir: Path
    config: Any = None
    hparams: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    resume: ResumePosition | None = None
    branch: str | None = None
    warn: Callable[[str], None] | None = dataclasses.field(default=None, compare=False, repr=False)
    say: Callable[[str], None] | None = dataclasses.field(default=None, compare=False, repr=False)

    def info(self, text: str) -> None:
        """Tell the user `text` (what a tracker did as expected, e.g. a branch's new run): on
        the console too when the learner gave `say`."""
        if self.say is not None:
            self.say(text)
        else:
            logging.getLogger("burnish.train").info("%s", text)

    def warning(self, text: str) -> None:
        """Warn the user with `text`: on the console too when the learner gave `warn`."""
        if self.warn is not None:
            self.warn(text)
        else:
            logging.getLogger("burnish.train").warning("%s", text)

    def params(self) -> dict[str, Any]:
        """The config flattened with `.` and the hyper-parameters, as one flat dict."""
        params = flatten_config(self.config) if self.config is not None else {}
        params.update(flatten_config(self.hparams))
        return params


class ExperimentLogger(ABC):
    """Sends a run's metrics to an experiment tracker; the learner drives it on rank 0.

    Call order: `start` once; any number of `log_iteration`/`log_epoch` (and `flush` before
    each checkpoint); `finish` when training ends normally; `close` always (safe twice).
    A logger is also a context manager that closes itself.

    Subclasses implement `start`, `log_epoch` and `close`; `log_iteration`, `flush` and
    `finish` are optional.
    """

    @abstractmethod
    def start(self, run: RunInfo) -> None:
        """Open the tracker's store for `run`; with `run.resume`, drop later points first."""

    def log_iteration(  # noqa: B027 - optional hook
        self,
        split: str,
        epoch: int,
        iteration: int,
        step: int,
        values: Mapping[str, float],
        lr: float | None = None,
    ) -> None:
        """Record the batch values of one iteration (every `log_every` iterations).

        Args:
            split: `"train"` or `"valid"`.
            epoch: The current epoch (1-based).
            iteration: The iteration within the epoch of `split` (1-based).
            step: Global training step: training iterations since the run began, this one
                included (for validation, the step its epoch's training ended at).
            values: Numeric metric name -> its value for this batch.
            lr: The learning rate of this iteration (None in validation).
        """

    @abstractmethod
    def log_epoch(
        self, split: str, epoch: int, values: Mapping[str, float], lr: float | None = None
    ) -> None:
        """Record the epoch value of each numeric metric of `split` (and the last lr)."""

    def flush(self) -> None:  # noqa: B027 - optional hook
        """Make everything logged so far durable (called before each checkpoint)."""

    def finish(  # noqa: B027 - optional hook
        self, summary: str | None = None, model_path: str | os.PathLike | None = None
    ) -> None:
        """The run ended normally: record the summary table and the final model's file.

        Args:
            summary: The `LearnerSummary` as text, or None.
            model_path: A file or directory with the final model's record, or None.
        """

    @abstractmethod
    def close(self) -> None:
        """Flush and release the tracker (files, runs). Safe to call more than once."""

    def __enter__(self) -> ExperimentLogger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def import_extra(module: str, extra: str, package: str, owner: str) -> ModuleType:
    """Import an optional dependency, or raise the house `ImportError` naming its extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise ImportError(
            f"{owner} needs {package}: install it (pip install 'burnish[{extra}]' or "
            f"pip install {package}), or remove {owner} from the learner's loggers."
        ) from error


def flatten_config(config: Any, prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """A config as one flat dict of scalars: nested keys joined with `sep`.

    Accepts a mapping, a `@burnish.config` instance (its `to_dict()`) or a dataclass. Lists
    and tuples become JSON text; other values that are not str/int/float/bool/None become
    their `str`.

    Example:
        >>> flatten_config({"model": {"hidden": 512}, "lr": 1e-4, "sizes": [1, 2]})
        {'model.hidden': 512, 'lr': 0.0001, 'sizes': '[1, 2]'}
    """
    data = _as_mapping(config)
    if data is None:
        raise TypeError(
            "`config` must be a mapping, a @burnish.config instance or a dataclass. "
            f"Received: {type(config).__name__}."
        )
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{sep}{key}" if prefix else str(key)
        nested = _as_mapping(value)
        if nested is not None:
            flat.update(flatten_config(nested, name, sep))
        elif value is None or isinstance(value, (str, bool, int, float)):
            flat[name] = value
        elif isinstance(value, (list, tuple)):
            flat[name] = json.dumps(value, default=str)
        else:
            flat[name] = str(value)
    return flat


def _as_mapping(value: Any) -> Mapping[str, Any] | None:
    if isinstance(value, Mapping):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        result = to_dict()
        if isinstance(result, Mapping):
            return result
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return None


def scalars(values: Mapping[str, float], lr: float | None) -> dict[str, float]:
    """The metric values as host floats (NaN and infinities kept), and the learning rate
    as `LR_NAME` when given: what every tracker records of one iteration or epoch."""
    if not isinstance(values, Mapping):
        raise TypeError(
            f"`values` must map metric names to floats. Received: {type(values).__name__}."
        )
    result = {str(name): float(value) for name, value in values.items()}
    if lr is not None:
        result[LR_NAME] = float(lr)
    return result


def check_position(epoch: int, iteration: int | None = None, step: int | None = None) -> None:
    """Raise unless `epoch` >= 1 and `iteration`, `step` (when given) are ints >= 1."""
    _check_count("epoch", epoch, 1)
    if iteration is not None:
        _check_count("iteration", iteration, 1)
    if step is not None:
        _check_count("step", step, 0)

"""The renderer interface: what the learner shows while it trains (Burn's `MetricsRenderer`)."""

from __future__ import annotations

from abc import ABCMeta, abstractmethod
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from burnish.train.interrupter import Interrupter
from burnish.train.split import Split, check_split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary

__all__ = [
    "MetricsRenderer",
    "RenderSnapshot",
    "TrainingProgress",
    "check_split",
    "format_value",
    "printable",
]


@dataclass(frozen=True)
class TrainingProgress:
    """Where the learner is (Burn's `TrainingProgress`).

    Attributes:
        epoch: The current epoch, starting at 1.
        epoch_total: The number of epochs of the run.
        iteration: The iteration counter of the learner.
        items_processed: Items (samples) processed so far in this epoch of this split.
        items_total: Items in one epoch of this split.
    """

    epoch: int
    epoch_total: int
    iteration: int
    items_processed: int
    items_total: int

    @property
    def fraction(self) -> float:
        """The fraction of this epoch done, in [0, 1] (0 when the epoch size is unknown)."""
        if self.items_total <= 0:
            return 0.0
        return min(1.0, max(0.0, self.items_processed / self.items_total))


@dataclass(frozen=True)
class RenderSnapshot:
    """The metric values of one iteration, read from the device at the renderer's rate.

    Attributes:
        split: `Split.TRAIN`, `Split.VALID` or, in an evaluation, `Split.TEST` (equal to
            `"train"`/`"valid"`/`"test"`).
        progress: Where the learner is.
        numeric: Numeric metric name -> `(current, running)`: the value of the last batch and
            the running value of the epoch so far, both host floats.
        text: Text metric name -> its formatted value.
    """

    split: Split
    progress: TrainingProgress
    numeric: dict[str, tuple[float, float]] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)


_BURN_METHODS = ("update_train", "update_valid", "update_test")


class _RendererMeta(ABCMeta):
    """`MetricsRenderer`'s metaclass: a subclass written to Burn's trait (it has Burn's
    `update_train`/`update_valid`/`update_test` and not burnish's `render`) is not abstract:
    `.renderer(obj)` drives it through `BurnMetricsRenderer`."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        cls = super().__new__(mcs, name, bases, namespace)
        burn = any(callable(getattr(cls, method, None)) for method in _BURN_METHODS)
        if burn and "render" in getattr(cls, "__abstractmethods__", ()):
            cls.__abstractmethods__ = frozenset()
        return cls


class MetricsRenderer(metaclass=_RendererMeta):
    """Shows training progress and metrics; the learner drives it.

    Call order: `start` once, then per iteration `due()` and, only when it returns True,
    `render(snapshot)`; `end_epoch` after each epoch of each split; `close` at the end (also
    when training fails). An `Evaluator` calls `start_test(name, ...)` before each data set
    it evaluates instead of `start`, then renders `Split.TEST` and ends it as epoch 1. A
    renderer is also a context manager that closes itself.
    """

    @abstractmethod
    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Begin a run of `num_epochs` epochs; `interrupter` receives stop requests."""

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Begin the evaluation of the data set `name` (the test split); default: `start(1)`.

        An `Evaluator` evaluating several data sets calls it once for each, without `close`
        in between.
        """
        self.start(1, interrupter)

    @abstractmethod
    def due(self) -> bool:
        """Whether the next `render` would be shown. A cheap check, called every iteration."""

    @abstractmethod
    def render(self, snapshot: RenderSnapshot) -> None:
        """Show the state of the current iteration."""

    @abstractmethod
    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """Record the final value of each numeric metric for one epoch of one split."""

    def start_split(self, split: Split) -> None:
        """`split`'s epoch begins now (a training epoch, or a validation, also one inside a
        training epoch): what `end_epoch` times it from (default: nothing)."""

    def start_evaluation(self, num_tests: int) -> None:
        """An `Evaluator` starts evaluating `num_tests` data sets, each then begun by
        `start_test` (Burn's `start_global_progress`; default: nothing)."""

    def manual_close(self) -> None:
        """Burn's `manual_close`: a renderer that stays open until its user closes it waits
        here. burnish's renderers close with the run (default: nothing to wait for)."""

    def model_summary(self, summary: ModelSummary) -> None:
        """Show the model's parameter summary before the first epoch (default: nothing)."""

    def message(self, text: str) -> None:
        """Tell the user something outside a run's progress, e.g. that a resumed run is
        already complete, when the renderer is not started (default: nothing)."""

    @abstractmethod
    def close(self) -> None:
        """Release the terminal. Safe to call more than once."""

    def __enter__(self) -> MetricsRenderer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def check_num_epochs(num_epochs: int) -> None:
    """Raise if `num_epochs` is not a positive int."""
    if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs < 1:
        raise ValueError(f"`num_epochs` must be an int >= 1. Received: num_epochs={num_epochs!r}.")


def format_value(value: float) -> str:
    """Format a metric value with 5 significant digits (scientific when tiny or huge).

    Example:
        >>> format_value(0.312414), format_value(1e-3), format_value(91.0), format_value(2e-5)
        ('0.31241', '0.001', '91', '2e-05')
    """
    return f"{float(value):.5g}"


def printable(text: str) -> str:
    """`text` with control characters (line breaks, escapes) as spaces: one line, no codes."""
    return "".join(char if char.isprintable() else " " for char in str(text))

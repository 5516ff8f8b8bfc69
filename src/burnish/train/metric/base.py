"""The metric protocol (Burn's `Metric`, `Numeric`, `Adaptor`, `NumericEntry`, `MetricEntry`).

A metric declares the input it needs as a small dataclass (`AccuracyInput`, `LossInput`, ...)
in its `input_type` attribute. `update(item, metadata)` receives whatever the model's step
returned and turns it into that input with `adapt(item, input_type)`:

- an item that already is an `input_type` is used as is;
- otherwise the item's `adapt(input_type)` method builds it (Burn: `Adaptor<Input>::adapt`);
  returning `NotImplemented` (or `None`) means "this output cannot feed that metric".

So a user-defined output works with every built-in metric by implementing one method:

    @dataclasses.dataclass
    class DetectionOutput:
        loss: torch.Tensor          # 0-dim
        class_logits: torch.Tensor  # [B, C]
        labels: torch.Tensor        # [B]

        @property
        def batch_size(self) -> int:
            return self.labels.shape[0]

        def adapt(self, input_type):
            if input_type is LossInput:
                return LossInput(self.loss, self.batch_size)
            if input_type is AccuracyInput:
                return AccuracyInput(self.class_logits, self.labels)
            return NotImplemented

Numeric metrics accumulate on the item's device and never read a tensor back to the host in
`update`; the learner reads all metrics of an iteration back together (see train/README.md).
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from burnish.train.metric.numeric_text import FINAL_TAG, display_f64
from burnish.train.metric.providers import outputs_providing, registered_outputs

if TYPE_CHECKING:
    import torch

    from burnish.data.dataloader.loader import Progress

__all__ = [
    "Adaptor",
    "Metric",
    "MetricEntry",
    "MetricMetadata",
    "Numeric",
    "NumericEntry",
    "Progress",
    "adapt",
    "format_float",
]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class MetricMetadata:
    """What the learner knows about the current iteration (Burn: `MetricMetadata`).

    Attributes:
        progress: items processed / total in this epoch.
        epoch: the current epoch, starting at 1.
        epoch_total: the number of epochs of the run.
        iteration: the current iteration within the epoch, starting at 1.
        lr: the learning rate used by this iteration's optimizer step, None in validation.
    """

    progress: Progress
    epoch: int
    epoch_total: int
    iteration: int
    lr: float | None = None


@dataclasses.dataclass
class NumericEntry:
    """One iteration's value of a numeric metric and the number of items it covers.

    Burn's `NumericEntry`: a log line is `"{value},{count}"` (`Aggregated`), and the line that
    ends an epoch is `"{value},final"` (`Final`: the metric's epoch value, which readers take
    instead of averaging the lines; `final=True`, `count` 0). Values are written as Rust writes
    an `f64` (`numeric_text.display_f64`). The epoch value is the metric's own
    (`Numeric.value()` at the epoch's end, docs/metrics.md), not always the count-weighted mean
    of its lines (it is not for perplexity, precision, padded accuracy).

    Attributes:
        value: the batch value: a 0-dim tensor on the item's device (never read back by the
            metric) or a host float for host-side metrics (learning rate, CPU use).
        count: the number of items the value covers (the batch size), a host int; 0 for a
            final entry.
        final: whether this is the epoch's final value (Burn's `NumericEntry::Final`).
    """

    value: torch.Tensor | float
    count: int
    final: bool = False

    def serialize(self) -> str:
        """`"{value},{count}"`, or `"{value},final"` for a final entry, as Burn writes them;
        reads `value` back from the device if it is a tensor."""
        value = display_f64(float(self.value))
        return f"{value},{FINAL_TAG}" if self.final else f"{value},{self.count}"

    @classmethod
    def deserialize(cls, text: str) -> NumericEntry:
        """Parse `"{value},{count}"`, `"{value},final"` or a lone `"{value}"` (count 1), as
        Burn's `NumericEntry::deserialize` does, into a host entry.

        Raises:
            ValueError: if `text` is not one of those forms (the count an int >= 0).
        """
        parts = text.strip().split(",")
        try:
            if len(parts) == 1:
                return cls(float(parts[0]), 1)
            if len(parts) == 2 and parts[1] == FINAL_TAG:
                return cls(float(parts[0]), 0, final=True)
            if len(parts) == 2 and int(parts[1]) >= 0:
                return cls(float(parts[0]), int(parts[1]))
        except ValueError:
            pass
        raise ValueError(
            "A numeric entry must be `value,count` (a float and an int >= 0), `value,final` "
            f"or a lone float. Received: {text!r}. Check that the metric log was written by "
            "burnish or Burn, and that the metric is numeric."
        )


@dataclasses.dataclass(frozen=True)
class MetricEntry:
    """The state of a text (non-numeric) metric at one iteration (Burn: `MetricEntry`).

    Attributes:
        name: the metric's name.
        formatted: what a renderer shows.
        serialized: what a metric logger writes (one line, no newline).
    """

    name: str
    formatted: str
    serialized: str


@runtime_checkable
class Adaptor(Protocol):
    """An output that turns itself into the inputs of the metrics it can feed (Burn: `Adaptor`).

    `adapt(input_type)` returns an instance of `input_type`, or `NotImplemented` when it cannot.
    """

    def adapt(self, input_type: type[T]) -> T:
        """An instance of `input_type` built from this output, or `NotImplemented`."""


def adapt(item: Any, input_type: type[T]) -> T:
    """Turn a step's output into the input a metric needs.

    Args:
        item: what the train or valid step returned (or already an `input_type`).
        input_type: the metric's input dataclass.

    Returns:
        `item` itself if it is an `input_type`, else `item.adapt(input_type)`.

    Raises:
        TypeError: if `item` cannot provide `input_type`.
    """
    if isinstance(item, input_type):
        return item
    method = getattr(item, "adapt", None)
    result = method(input_type) if callable(method) else NotImplemented
    if isinstance(result, input_type):
        return result
    if result is not NotImplemented and result is not None:
        raise TypeError(
            f"`{type(item).__name__}.adapt({input_type.__name__})` must return a "
            f"{input_type.__name__}. Received: {type(result).__name__}."
        )
    raise MetricInputError(item, input_type)


_STEPS = {"train": "`train_step`", "valid": "`valid_step`", "test": "the evaluated step"}


class MetricInputError(TypeError):
    """A step's output that cannot be adapted to a registered metric's input (`adapt`).

    The message names the output, the input and the built-in outputs that provide it; the
    metrics processor adds the metric, its split and the step (`for_metric`).

    Attributes:
        item: what the step returned.
        input_type: the input the metric needs.
    """

    def __init__(self, item: Any, input_type: type, metric: Any = None, split: str = "") -> None:
        self.item, self.input_type = item, input_type
        super().__init__(_mismatch(item, input_type, metric, split))

    def for_metric(self, metric: Any, split: str) -> MetricInputError:
        """This error, told which metric (of which split) needed the input."""
        return MetricInputError(self.item, self.input_type, metric, split)


def _mismatch(item: Any, input_type: type, metric: Any, split: str) -> str:
    name, wanted = type(item).__name__, input_type.__name__
    bare = ""
    if type(item).__module__.startswith("torch") and name == "Tensor":
        bare = "; a bare tensor feeds no metric"
    step = _STEPS.get(split, "the step")
    if metric is None:
        head = f"The step's output `{name}` cannot be adapted to `{wanted}`, the input of a "
        head += f"registered metric{bare}."
        drop = "remove that metric"
    else:
        kind = type(metric).__name__
        head = f"`{kind}` ({split} metric {metric.name!r}) needs its input `{wanted}`, and {step} "
        head += f"returned `{name}`: `{name}` cannot be adapted to `{wanted}`{bare}."
        drop = f"remove `{kind}` from the {split} metrics"
    providers = outputs_providing(input_type)
    if providers:
        names = " and ".join(f"`{call.split('(')[0]}`" for call in providers)
        verb = "provides" if len(providers) == 1 else "provide"
        fix = f" {names} {verb} it: return {' or '.join(f'`{c}`' for c in providers)} "
        fix += f"from {step} (docs/metrics.md lists what each output feeds); or "
    elif registered_outputs():
        fix = f" No output of burnish.train provides a `{wanted}`: "
    else:  # burnish.train.output never imported: which output provides it is not known here
        fix = f" docs/metrics.md lists the outputs of burnish.train that provide a `{wanted}`: "
        fix += f"return one from {step}; or "
    if bare:
        fix += "an output class of your own with an `adapt(self, input_type)` method"
    else:
        fix += f"give `{name}` an `adapt(self, input_type)` method"
    fix += f" that returns `{wanted}(...)` when `input_type is {wanted}` (see "
    fix += f"burnish.train.metric.Adaptor); or {drop}."
    return head + fix


def format_float(value: float, precision: int) -> str:
    """Burn's `format_float`: fixed point, or scientific below `0.1 ** (precision - 1)`."""
    if not math.isfinite(value):
        return str(value)
    if value == 0.0 or value > 0.1 ** (precision - 1):
        return f"{value:.{precision}f}"
    return f"{value:.{precision}e}"


class Metric(ABC):
    """A metric updated once per iteration with the step's output (Burn: `Metric`).

    Attributes:
        name: unique among the metrics of a split; the log file is `<name>.log`.
        input_type: the input dataclass `update` adapts the item to, or None if the metric
            only uses `metadata` (learning rate, speed, system metrics).
    """

    name: str
    input_type: type | None = None

    @abstractmethod
    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry | NumericEntry | None:
        """Add one iteration's output; return this iteration's entry. Never syncs the device."""

    def clear(self) -> None:  # noqa: B027 (a no-op default, not an abstract method)
        """Forget the epoch's state; the learner calls it at the end of each epoch."""

    def companions(self) -> tuple[Metric, ...]:
        """Metrics that come with this one: registering it registers them right after it, on
        the same split (`ThroughputMetric`'s `MFU`). Default: none."""
        return ()

    def to_record(self) -> dict[str, Any]:
        """The mid-epoch state, so a resumed run continues the epoch's value exactly."""
        return {}

    def load_record(self, record: dict[str, Any]) -> None:  # noqa: B027
        """Restore the state saved by `to_record`."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class Numeric(Metric):
    """A metric with a number per iteration, plotted and used by early stopping (Burn: `Numeric`).

    Attributes:
        higher_is_better: True for accuracy-like metrics, False for losses; used by
            early stopping and best-checkpoint strategies.
        unit: shown after the value by renderers (e.g. `"%"`), or None.
        precision: decimals shown by renderers.
        computed_per_epoch: True for metrics computed once per epoch (e.g. `TorchMetric`):
            their `update` returns None and `epoch_entry()` gives the epoch's one log line.
    """

    higher_is_better: bool = True
    unit: str | None = None
    precision: int = 2
    computed_per_epoch: bool = False

    @abstractmethod
    def value(self) -> torch.Tensor:
        """The running epoch value: a 0-dim float tensor, computed without a host sync."""

    def epoch_entry(self) -> NumericEntry:
        """The epoch's value and item count, for metrics `computed_per_epoch`.

        Raises:
            NotImplementedError: for metrics with an entry per iteration.
        """
        raise NotImplementedError(
            f"{type(self).__name__} logs an entry per iteration; only metrics with "
            "`computed_per_epoch = True` implement `epoch_entry()`."
        )

    def format(self, current: float, running: float) -> str:
        """Burn's `"epoch {running} {unit} - batch {current} {unit}"` line."""
        unit = f" {self.unit}" if self.unit else ""
        running_text = format_float(running, self.precision)
        current_text = format_float(current, self.precision)
        return f"epoch {running_text}{unit} - batch {current_text}{unit}"


def __getattr__(name: str) -> Any:
    # `Progress` lives with the data loader (torch); imported on first use so that reading
    # metric logs (`NumericEntry`) does not import torch.
    if name == "Progress":
        from burnish.data.dataloader.loader import Progress

        return Progress
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Any torchmetrics metric as a burnish numeric metric (`pip install 'burnish[torchmetrics]'`)."""

from __future__ import annotations

import base64
import dataclasses
from typing import Any

import torch

from burnish.errors import RecordError
from burnish.train.metric.base import MetricMetadata, Numeric, NumericEntry, adapt

__all__ = ["TorchMetric", "TorchMetricInput"]


@dataclasses.dataclass
class TorchMetricInput:
    """Input of `TorchMetric`: what a torchmetrics metric's `update(preds, target)` takes.

    The built-in outputs provide it: `ClassificationOutput`, `MultiLabelClassificationOutput`
    and `RegressionOutput` give `(output, targets)`; `SequenceOutput` gives its logits and
    targets flattened to `[batch_size * seq_len, ...]`. Give your own output an
    `adapt(self, input_type)` that returns one to feed a `TorchMetric` from it.

    Attributes:
        preds: Scores or predictions, as the metric expects (e.g. `[N, C]` logits).
        target: Targets, as the metric expects (e.g. `[N]` class indices).
    """

    preds: torch.Tensor
    target: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `preds`; 1 for a scalar)."""
        return self.preds.shape[0] if self.preds.ndim else 1


class TorchMetric(Numeric):
    """Wrap a `torchmetrics.Metric` so the learner updates, logs and checkpoints it.

    Each iteration only calls the torchmetrics `update` on the device (no host sync, no
    `compute`); the metric is computed once per epoch, over every item of the epoch, with
    torchmetrics' own synchronisation across ranks under `torch.distributed` — e.g. macro F1
    of the whole epoch, not a mean of batch F1s. Its log has one line per epoch: the epoch
    value and the epoch's item count.

    The running value the dashboard shows mid-epoch is this process's own (not synced).
    Checkpoints hold the metric's states, so a run resumed mid-epoch computes the same value.

    Example:
        >>> from torchmetrics.classification import MulticlassF1Score  # doctest: +SKIP
        >>> builder.metric_valid_numeric(
        ...     TorchMetric(MulticlassF1Score(num_classes=10, average="macro")))  # doctest: +SKIP

    Args:
        torchmetrics_metric: A torchmetrics metric returning a scalar (one instance per split:
            the train and valid metrics must be different objects). It follows the items'
            device.
        name: The metric's name in logs and renderers; None: the class name
            (e.g. `"MulticlassF1Score"`).
        higher_is_better: None: the metric's own `higher_is_better` (True if it has none).
        precision: Decimals shown by renderers.

    Raises:
        ImportError: if torchmetrics is not installed.
        TypeError: if `torchmetrics_metric` is not a `torchmetrics.Metric`.
    """

    input_type = TorchMetricInput
    computed_per_epoch = True
    """The processor logs `epoch_entry()` once per epoch instead of per-iteration entries."""

    def __init__(
        self,
        torchmetrics_metric: Any,
        name: str | None = None,
        higher_is_better: bool | None = None,
        precision: int = 4,
    ) -> None:
        torchmetrics = _import_torchmetrics()
        metric = torchmetrics_metric
        if not isinstance(metric, torchmetrics.Metric):
            raise TypeError(
                "`torchmetrics_metric` must be a torchmetrics.Metric instance, e.g. "
                "TorchMetric(MulticlassF1Score(num_classes=10)). "
                f"Received: {type(metric).__name__}."
            )
        self.metric = metric
        self.name = name if name is not None else type(metric).__name__
        if higher_is_better is None:
            higher_is_better = getattr(metric, "higher_is_better", None)
        self.higher_is_better = True if higher_is_better is None else bool(higher_is_better)
        self.precision = precision
        self.items = 0  # items seen this epoch on this rank (a host int)

    def __repr__(self) -> str:
        return f"TorchMetric({type(self.metric).__name__}, name={self.name!r})"

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> None:
        """Add a batch to the torchmetrics states; returns None (no per-iteration entry)."""
        data = adapt(item, TorchMetricInput)
        device = data.preds.device
        if self.metric.device != device:
            self.metric.to(device)
        self.metric.update(data.preds, data.target)
        self.items += data.batch_size

    def value(self) -> torch.Tensor:
        """This process's running value (torchmetrics `compute` on the local states, no sync).

        NaN before the first update.
        """
        if not self.metric.update_called:
            return torch.tensor(float("nan"), dtype=torch.float64)
        with torch.no_grad():
            result = type(self.metric).compute(self.metric)  # the unwrapped compute: no sync
        return _scalar(result, self.name)

    def epoch_entry(self) -> NumericEntry:
        """The epoch's value over every rank (torchmetrics `compute`) and this rank's items.

        Under `torch.distributed` this is a collective: every rank calls it at the same point.
        """
        if not self.metric.update_called:
            return NumericEntry(float("nan"), 0)
        with torch.no_grad():
            result = self.metric.compute()
        return NumericEntry(_scalar(result, self.name), self.items)

    def clear(self) -> None:
        """Reset the torchmetrics states (end of epoch)."""
        self.metric.reset()
        self.items = 0

    def to_record(self) -> dict[str, Any]:
        """The metric's states (exact bytes, whatever the recorder's precision) and counts."""
        states: dict[str, Any] = {}
        for attr in self.metric._defaults:
            state = getattr(self.metric, attr)
            if isinstance(state, torch.Tensor):
                states[attr] = _tensor_record(state)
            else:
                states[attr] = [_tensor_record(t) for t in state]
        return {"updates": int(self.metric._update_count), "items": self.items, "states": states}

    def load_record(self, record: dict[str, Any]) -> None:
        """Restore the states saved by `to_record` (on the metric's current device).

        Raises:
            RecordError: if the record's states are not this metric's.
        """
        if not isinstance(record, dict) or not {"updates", "items", "states"} <= set(record):
            raise RecordError(
                f"The record of {self.name!r} must have `updates`, `items` and `states`. "
                "Load a record produced by that metric's `to_record()`."
            )
        expected, found = set(self.metric._defaults), set(record["states"])
        if expected != found:
            raise RecordError(
                f"The record of {self.name!r} has the states {sorted(found)}, but "
                f"{type(self.metric).__name__} has {sorted(expected)}. Resume with the same "
                "torchmetrics metric and arguments."
            )
        device = self.metric.device
        self.metric.reset()
        for attr, saved in record["states"].items():
            if isinstance(saved, list):
                value: Any = [_tensor_from_record(t, device) for t in saved]
            else:
                value = _tensor_from_record(saved, device)
            setattr(self.metric, attr, value)
        self.metric._update_count = int(record["updates"])
        self.metric._computed = None
        self.items = int(record["items"])


def _import_torchmetrics() -> Any:
    try:
        import torchmetrics
    except ImportError as error:
        raise ImportError(
            "TorchMetric needs torchmetrics: install it (pip install 'burnish[torchmetrics]' "
            "or pip install torchmetrics), or remove TorchMetric from the learner's metrics."
        ) from error
    return torchmetrics


def _scalar(result: Any, name: str) -> torch.Tensor:
    if not isinstance(result, torch.Tensor) or result.numel() != 1:
        shape = list(result.shape) if isinstance(result, torch.Tensor) else type(result).__name__
        raise ValueError(
            f"TorchMetric {name!r} must compute one number per epoch. Received: {shape}. Use "
            "a scalar reduction (e.g. average='macro'), or wrap one value per metric."
        )
    return (
        result.detach()
        .reshape(())
        .to(torch.float64 if result.device.type != "mps" else torch.float32)
    )


def _tensor_record(tensor: torch.Tensor) -> dict[str, Any]:
    """A tensor as dtype, shape and its raw bytes in base64: exact in every recorder."""
    flat = tensor.detach().cpu().contiguous().reshape(-1)
    data = flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""
    return {
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "data": base64.b64encode(data).decode("ascii"),
    }


def _tensor_from_record(record: dict[str, Any], device: torch.device) -> torch.Tensor:
    try:
        dtype = getattr(torch, record["dtype"])
        shape = [int(n) for n in record["shape"]]
        data = bytearray(base64.b64decode(record["data"]))
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise RecordError(f"A TorchMetric state record is malformed: {error}.") from error
    if not isinstance(dtype, torch.dtype):
        raise RecordError(f"A TorchMetric state record has an unknown dtype {record['dtype']!r}.")
    if not data:
        return torch.empty(shape, dtype=dtype, device=device)
    flat = torch.frombuffer(data, dtype=torch.uint8).view(dtype)
    return flat.reshape(shape).to(device)

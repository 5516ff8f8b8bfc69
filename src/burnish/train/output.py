"""What train and valid steps return (Burn's `TrainOutput`, `ClassificationOutput`, ...).

Each output knows which metric inputs it can provide: `output.adapt(AccuracyInput)` returns
an `AccuracyInput`, and every metric's `update` calls it (Burn's `Adaptor<AccuracyInput>`).

| output                           | feeds                                                    |
|----------------------------------|----------------------------------------------------------|
| `ClassificationOutput`           | loss, accuracy, top-k accuracy, precision/recall/F-beta, |
|                                  | AUROC, AUC-PR, perplexity, `TorchMetric`                 |
| `MultiLabelClassificationOutput` | loss, Hamming score, precision/recall/F-beta, AUROC,     |
|                                  | AUC-PR, `TorchMetric`                                    |
| `RegressionOutput`               | loss, `TorchMetric`                                      |
| `SequenceOutput`                 | loss, accuracy, top-k accuracy, perplexity (per token),  |
|                                  | CER, WER, BLEU, ROUGE-L, `TorchMetric` (per token)       |

Your own output type works with any metric once it has an `adapt(input_type)` method that
returns the metric's input (or `NotImplemented`), and a `batch_size`:

    @dataclasses.dataclass
    class SegmentationOutput:
        loss: torch.Tensor     # 0-dim
        logits: torch.Tensor   # [B, C, H, W]
        masks: torch.Tensor    # [B, H, W]

        @property
        def batch_size(self) -> int:
            return self.logits.shape[0]

        def adapt(self, input_type):
            if input_type is LossInput:
                return LossInput(self.loss, self.batch_size)
            if input_type is AccuracyInput:  # pixel accuracy
                logits = self.logits.movedim(1, -1).flatten(0, 2)
                return AccuracyInput(logits, self.masks.flatten())
            return NotImplemented
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import torch
from torch import nn

from burnish.train.metric.accuracy import AccuracyInput, TopKAccuracyInput
from burnish.train.metric.bleu import BleuInput
from burnish.train.metric.classification import ConfusionStatsInput
from burnish.train.metric.error_rate import CerInput, WerInput
from burnish.train.metric.hamming import HammingScoreInput
from burnish.train.metric.loss import LossInput
from burnish.train.metric.perplexity import PerplexityInput
from burnish.train.metric.providers import outputs_providing as outputs_providing  # re-export
from burnish.train.metric.providers import register_output
from burnish.train.metric.rouge import RougeLInput
from burnish.train.metric.torchmetric import TorchMetricInput

if TYPE_CHECKING:
    from burnish.optim import Gradients, GradientsParams

__all__ = [
    "ClassificationOutput",
    "MultiLabelClassificationOutput",
    "RegressionOutput",
    "SequenceOutput",
    "TrainOutput",
]

Item = TypeVar("Item")

# Inputs made of (scores [N, C], class indices [N]): built the same way from an output.
_SCORES_AND_CLASSES = (AccuracyInput, TopKAccuracyInput, PerplexityInput)
# Inputs made of (predicted tokens [B, L], target tokens [B, L]).
_TOKENS = (CerInput, WerInput, BleuInput, RougeLInput)


@dataclasses.dataclass
class TrainOutput(Generic[Item]):
    """What `train_step` returns: the gradients to apply and the item for the metrics.

    Burn: `TrainOutput::new(&model, grads, item)`. `grads` is what `bn.backward(loss)`
    returned (or a `GradientsParams`); the learner keeps the parameters of `model`.

    Attributes:
        model: the model the step ran on (`self` in `train_step`).
        grads: the gradients of the step's loss.
        item: the output the train metrics are updated with, e.g. a `ClassificationOutput`.
    """

    model: nn.Module
    grads: Gradients | GradientsParams
    item: Item

    @property
    def batch_size(self) -> int | None:
        """The item's batch size, if it has one."""
        return getattr(self.item, "batch_size", None)

    def adapt(self, input_type: type[Any]) -> Any:
        """Metrics given the whole `TrainOutput` adapt its item."""
        if isinstance(self.item, input_type):
            return self.item
        method = getattr(self.item, "adapt", None)
        return method(input_type) if callable(method) else NotImplemented


def _class_mask(targets: torch.Tensor, num_classes: int) -> torch.Tensor:
    """One-hot bool `[N, C]` from class indices `[N]`, or `[N, 1]` for binary targets.

    Compares with `arange` rather than `F.one_hot`, which reads the targets back to check them.
    """
    if num_classes == 1:
        return targets.reshape(-1, 1).bool()
    classes = torch.arange(num_classes, device=targets.device)
    return targets.reshape(-1, 1) == classes


@dataclasses.dataclass
class _LossOutputTargets:
    """The fields shared by the classification and regression outputs; feeds `LossMetric`."""

    loss: torch.Tensor
    output: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        return self.output.shape[0]

    def adapt(self, input_type: type[Any]) -> Any:
        """Loss input, or `TorchMetricInput(output, targets)`."""
        if input_type is LossInput:
            return LossInput(self.loss, self.batch_size)
        if input_type is TorchMetricInput:
            return TorchMetricInput(self.output, self.targets)
        return NotImplemented


@dataclasses.dataclass
class ClassificationOutput(_LossOutputTargets):
    """Output of a single-label classifier (Burn: `ClassificationOutput`).

    Attributes:
        loss: the batch loss (0-dim).
        output: scores, shape `[batch_size, num_classes]`. A binary task either gives two
            columns (accuracy, `*.multiclass` metrics) or one column, the positive class's
            probability (`PrecisionMetric.binary`, `AurocMetric.binary` & co.; accuracy
            refuses it).
        targets: class indices, shape `[batch_size]`.
    """

    def adapt(self, input_type: type[Any]) -> Any:
        """Loss, accuracy, top-k accuracy, perplexity or confusion-stats (precision, recall,
        F-beta, AUROC, AUC-PR) input."""
        if input_type in _SCORES_AND_CLASSES:
            return input_type(self.output, self.targets)
        if input_type is ConfusionStatsInput:
            mask = _class_mask(self.targets, self.output.shape[1])
            return ConfusionStatsInput(self.output, mask)
        return super().adapt(input_type)


@dataclasses.dataclass
class MultiLabelClassificationOutput(_LossOutputTargets):
    """Output of a multi-label classifier (Burn: `MultiLabelClassificationOutput`).

    Attributes:
        loss: the batch loss (0-dim).
        output: scores, shape `[batch_size, num_labels]`.
        targets: 0/1 labels of the same shape.
    """

    def adapt(self, input_type: type[Any]) -> Any:
        """Loss, Hamming-score or confusion-stats input."""
        if input_type is HammingScoreInput:
            return HammingScoreInput(self.output, self.targets)
        if input_type is ConfusionStatsInput:
            return ConfusionStatsInput(self.output, self.targets.bool())
        return super().adapt(input_type)


@dataclasses.dataclass
class RegressionOutput(_LossOutputTargets):
    """Output of a regression model (Burn: `RegressionOutput`); feeds `LossMetric`.

    Attributes:
        loss: the batch loss (0-dim).
        output: predictions, shape `[batch_size, num_outputs]`.
        targets: targets of the same shape.
    """


@dataclasses.dataclass
class SequenceOutput:
    """Output of a sequence model, e.g. a language model (Burn: `SequenceOutput`).

    Token metrics (accuracy, top-k accuracy, perplexity) see the `batch_size * seq_len`
    tokens as one flat batch; use their `pad_token` to skip padding. Sequence metrics (CER,
    WER, BLEU, ROUGE-L) compare `predicted_tokens()` with `targets`, sequence by sequence.

    Attributes:
        loss: the batch loss (0-dim).
        logits: shape `[batch_size, seq_len, vocab_size]`.
        predictions: predicted token indices `[batch_size, seq_len]`, or None for the argmax
            of `logits` (Burn's `Option`; pass None explicitly, the field order is Burn's).
        targets: target token indices, shape `[batch_size, seq_len]`.
    """

    loss: torch.Tensor
    logits: torch.Tensor
    predictions: torch.Tensor | None
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `targets`)."""
        return self.targets.shape[0]

    @property
    def num_tokens(self) -> int:
        """The tokens of the batch, `batch_size * seq_len` (padding included): what
        `ThroughputMetric(tokens=True)` counts. A host int, read from the shape."""
        return self.targets.numel()

    def predicted_tokens(self) -> torch.Tensor:
        """`predictions`, or the argmax of `logits` over the vocabulary."""
        if self.predictions is not None:
            return self.predictions
        return self.logits.argmax(dim=-1)

    def adapt(self, input_type: type[Any]) -> Any:
        """Loss input, a per-token accuracy, top-k accuracy or perplexity input, or the
        predicted and target tokens for CER, WER, BLEU and ROUGE-L."""
        if input_type is LossInput:
            return LossInput(self.loss, self.batch_size)
        if input_type in _TOKENS:
            return input_type(self.predicted_tokens(), self.targets)
        if input_type in (AccuracyInput, TopKAccuracyInput, PerplexityInput, TorchMetricInput):
            vocab_size = self.logits.shape[-1]
            return input_type(self.logits.reshape(-1, vocab_size), self.targets.reshape(-1))
        return NotImplemented


# What each output provides, for the error of a step output that feeds no registered metric
# (the metrics do not import this module: see metric/providers.py). One-item samples.
register_output(
    "ClassificationOutput(loss, output, targets)",
    lambda: ClassificationOutput(
        torch.zeros(()), torch.zeros(1, 2), torch.zeros(1, dtype=torch.long)
    ),
)
register_output(
    "MultiLabelClassificationOutput(loss, output, targets)",
    lambda: MultiLabelClassificationOutput(
        torch.zeros(()), torch.zeros(1, 2), torch.zeros(1, 2, dtype=torch.long)
    ),
)
register_output(
    "RegressionOutput(loss, output, targets)",
    lambda: RegressionOutput(torch.zeros(()), torch.zeros(1, 1), torch.zeros(1, 1)),
)
register_output(
    "SequenceOutput(loss, logits, predictions, targets)",
    lambda: SequenceOutput(
        torch.zeros(()), torch.zeros(1, 1, 2), None, torch.zeros(1, 1, dtype=torch.long)
    ),
)

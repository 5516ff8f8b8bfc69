"""Step outputs: which metric inputs each one provides, and user-defined outputs."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from burnish.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    ConfusionStatsInput,
    FBetaScoreMetric,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    PerplexityInput,
    PerplexityMetric,
    PrecisionMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
    adapt,
)
from burnish.train.output import (
    ClassificationOutput,
    MultiLabelClassificationOutput,
    RegressionOutput,
    SequenceOutput,
    TrainOutput,
)

from tests.train.metric.helpers import metadata

LOGITS = torch.tensor([[2.0, 0.1, 0.3], [0.1, 0.2, 3.0], [1.0, 4.0, 0.0], [0.5, 0.1, 0.0]])
TARGETS = torch.tensor([0, 2, 2, 1])
CLASSIFICATION = ClassificationOutput(torch.tensor(0.7), LOGITS, TARGETS)


def test_classification_output_feeds_its_metrics() -> None:
    loss = adapt(CLASSIFICATION, LossInput)
    assert loss.batch_size == 4 and float(loss.loss) == pytest.approx(0.7)
    for input_type in (AccuracyInput, TopKAccuracyInput, PerplexityInput):
        data = adapt(CLASSIFICATION, input_type)
        assert type(data) is input_type
        assert data.outputs is LOGITS and data.targets is TARGETS
    stats = adapt(CLASSIFICATION, ConfusionStatsInput)
    assert stats.targets.tolist() == torch.eye(3, dtype=torch.bool)[TARGETS].tolist()
    assert CLASSIFICATION.batch_size == 4


def test_binary_classification_targets_become_one_column() -> None:
    output = ClassificationOutput(torch.tensor(0.1), torch.rand(4, 1), torch.tensor([0, 1, 1, 0]))
    stats = adapt(output, ConfusionStatsInput)
    assert stats.targets.tolist() == [[False], [True], [True], [False]]


def test_metrics_take_the_output_directly() -> None:
    metrics = [AccuracyMetric(), TopKAccuracyMetric(2), LossMetric(), PrecisionMetric.multiclass()]
    values = [float(m.update(CLASSIFICATION, metadata()).value) for m in metrics]
    assert values == pytest.approx([50.0, 75.0, 0.7, 100 * (1 + 0 + 1 / 2) / 3])


def test_multilabel_output_feeds_hamming_precision_and_loss() -> None:
    targets = torch.tensor([[1, 0, 1], [0, 1, 0]])
    output = MultiLabelClassificationOutput(torch.tensor(0.2), torch.rand(2, 3), targets)
    assert adapt(output, HammingScoreInput).targets is targets
    assert adapt(output, ConfusionStatsInput).targets.dtype == torch.bool
    for metric in (HammingScore(), FBetaScoreMetric.multilabel(1.0), LossMetric()):
        assert metric.update(output, metadata()).count == 2


def test_regression_output_feeds_the_loss_only() -> None:
    output = RegressionOutput(torch.tensor(1.5), torch.zeros(5, 2), torch.ones(5, 2))
    assert LossMetric().update(output, metadata()).count == 5
    with pytest.raises(TypeError, match="`RegressionOutput` cannot be adapted to `AccuracyInput`"):
        AccuracyMetric().update(output, metadata())


def test_sequence_output_flattens_tokens() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 3, 5, generator=gen)
    targets = torch.randint(0, 5, (2, 3), generator=gen)
    output = SequenceOutput(torch.tensor(1.0), logits, None, targets)
    data = adapt(output, PerplexityInput)
    assert data.outputs.shape == (6, 5) and data.targets.shape == (6,)
    assert adapt(output, LossInput).batch_size == 2
    assert torch.equal(output.predicted_tokens(), logits.argmax(-1))
    given = torch.zeros(2, 3, dtype=torch.long)
    assert SequenceOutput(torch.tensor(1.0), logits, given, targets).predicted_tokens() is given
    token_accuracy = (logits.argmax(-1) == targets).double().mean() * 100
    assert float(AccuracyMetric().update(output, metadata()).value) == pytest.approx(
        float(token_accuracy)
    )
    assert PerplexityMetric().update(output, metadata()).count == 6
    with pytest.raises(
        TypeError, match="`SequenceOutput` cannot be adapted to `ConfusionStatsInput`"
    ):
        adapt(output, ConfusionStatsInput)


def test_train_output_carries_model_grads_and_item() -> None:
    model = torch.nn.Linear(3, 3)
    output = TrainOutput(model, {"weight": torch.zeros(3, 3)}, CLASSIFICATION)
    assert output.model is model and output.item is CLASSIFICATION
    assert output.batch_size == 4
    assert adapt(output, AccuracyInput).outputs is LOGITS  # metrics may be given it whole
    assert TrainOutput(model, None, 1.0).batch_size is None


@dataclasses.dataclass
class SegmentationOutput:
    """The user-defined output of output.py's docstring."""

    loss: torch.Tensor
    logits: torch.Tensor  # [B, C, H, W]
    masks: torch.Tensor  # [B, H, W]

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


def test_a_user_output_works_by_implementing_adapt() -> None:
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 4, 3, 3, generator=gen)
    masks = torch.randint(0, 4, (2, 3, 3), generator=gen)
    output = SegmentationOutput(torch.tensor(0.9), logits, masks)
    accuracy = AccuracyMetric()
    accuracy.update(output, metadata())
    expected = (logits.argmax(1) == masks).double().mean() * 100
    assert float(accuracy.value()) == pytest.approx(float(expected))
    assert LossMetric().update(output, metadata()).count == 2
    with pytest.raises(TypeError, match="`SegmentationOutput` cannot be adapted to `HammingScore"):
        HammingScore().update(output, metadata())

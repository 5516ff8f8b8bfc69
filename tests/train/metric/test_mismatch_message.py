"""A step output that cannot feed a registered metric: the message names the metric, the
input it needs, the outputs that provide that input, what the step returned, and the fix;
never the returned output itself among the outputs to return."""

from __future__ import annotations

import pytest
import torch

from burnish.train import (
    ClassificationOutput,
    MultiLabelClassificationOutput,
    RegressionOutput,
    SequenceOutput,
)
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.metric import (
    AccuracyMetric,
    HammingScore,
    MetricMetadata,
    PerplexityMetric,
    PrecisionMetric,
    Progress,
    WordErrorRate,
)
from burnish.train.renderer import NullRenderer, TrainingProgress
from burnish.train.report.processor import MetricsProcessor, SplitMetrics
from burnish.train.split import Split

from tests.train.helpers import Mlp, builder, loaders

LOGITS, CLASSES = torch.randn(4, 3), torch.tensor([0, 2, 1, 2])
REGRESSION = RegressionOutput(torch.tensor(1.0), torch.zeros(4, 1), torch.ones(4, 1))
CLASSIFICATION = ClassificationOutput(torch.tensor(1.0), LOGITS, CLASSES)
MULTILABEL = MultiLabelClassificationOutput(torch.tensor(1.0), LOGITS, torch.ones(4, 3))
SEQUENCE = SequenceOutput(torch.tensor(1.0), torch.randn(2, 3, 5), None, torch.zeros(2, 3))

# (metric, returned output, the input, the outputs that provide it, those that do not)
PAIRS = [
    (AccuracyMetric, REGRESSION, "AccuracyInput", ["ClassificationOutput", "SequenceOutput"]),
    (HammingScore, CLASSIFICATION, "HammingScoreInput", ["MultiLabelClassificationOutput"]),
    (PerplexityMetric, MULTILABEL, "PerplexityInput", ["ClassificationOutput", "SequenceOutput"]),
    (
        PrecisionMetric.multiclass,
        SEQUENCE,
        "ConfusionStatsInput",
        ["ClassificationOutput", "MultiLabelClassificationOutput"],
    ),
    (WordErrorRate, REGRESSION, "WerInput", ["SequenceOutput"]),
]
ALL = [
    "ClassificationOutput",
    "MultiLabelClassificationOutput",
    "RegressionOutput",
    "SequenceOutput",
]


@pytest.mark.parametrize("make, output, wanted, providers", PAIRS, ids=lambda p: str(p)[:20])
@pytest.mark.parametrize("split", [Split.VALID, Split.TRAIN])
def test_the_message_names_the_metric_its_input_the_providers_and_the_fix(
    make, output, wanted, providers, split
):
    metric = make()
    processor = MetricsProcessor(
        [SplitMetrics(split, [metric], InMemoryMetricLogger())], NullRenderer()
    )
    metadata = MetricMetadata(Progress(4, 8), 1, 1, 1)
    with pytest.raises(TypeError) as raised:
        processor.process(split, output, metadata, TrainingProgress(1, 1, 1, 4, 8))
    message = str(raised.value)
    kind, returned, step = type(metric).__name__, type(output).__name__, f"`{split.value}_step`"
    assert message.startswith(
        f"`{kind}` ({split.value} metric {metric.name!r}) needs its input `{wanted}`, "
        f"and {step} returned `{returned}`: `{returned}` cannot be adapted to `{wanted}`."
    )
    # The sentence that says which outputs provide the input:
    proposed = message.split(f"`{wanted}`.", 1)[1].split("provide")[0]
    for name in ALL:
        assert (f"`{name}`" in proposed) == (name in providers), (name, message)
    assert returned not in providers
    assert f"from {step}" in message
    assert f"give `{returned}` an `adapt(self, input_type)` method" in message
    assert f"or remove `{kind}` from the {split.value} metrics." in message


def test_an_input_no_built_in_output_provides_says_so():
    from burnish.train.metric.base import adapt
    from burnish.train.metric.vision.dice import DiceInput

    with pytest.raises(TypeError, match=r"No output of burnish\.train provides a `DiceInput`"):
        adapt(CLASSIFICATION, DiceInput)


class RegressionValid(Mlp):
    """The issue's case: `valid_step` returns a `RegressionOutput`, Accuracy is registered."""

    def valid_step(self, batch) -> RegressionOutput:
        output = self.forward(batch.images)
        return RegressionOutput(output.square().mean(), output, torch.zeros_like(output))


def test_a_fit_whose_valid_step_returns_a_regression_output_names_accuracy(tmp_path):
    from burnish.optim import AdamConfig

    learner = builder(tmp_path, epochs=1).build(RegressionValid(), AdamConfig().init(), 1e-3)
    with pytest.raises(TypeError) as raised:
        learner.fit(*loaders(train_items=64, valid_items=64))
    message = str(raised.value)
    assert "`AccuracyMetric` (valid metric 'Accuracy') needs its input `AccuracyInput`" in message
    assert "`valid_step` returned `RegressionOutput`" in message
    assert "return `ClassificationOutput(loss, output, targets)` or `SequenceOutput(" in message
    assert "return `RegressionOutput" not in message

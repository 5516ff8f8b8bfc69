"""TorchMetric: torchmetrics metrics computed once per epoch, exact after a record round trip."""

import math

import pytest
import torch

pytest.importorskip("torchmetrics")

from torchmetrics.classification import MulticlassF1Score
from torchmetrics.regression import R2Score

from burnish.errors import RecordError
from burnish.record import CompactRecorder, DefaultRecorder
from burnish.train.metric.base import Numeric
from burnish.train.metric.torchmetric import TorchMetric, TorchMetricInput
from burnish.train.output import (
    ClassificationOutput,
    RegressionOutput,
    SequenceOutput,
)

NUM_CLASSES = 5


def classification_batches(count=6, size=16, seed=0):
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        logits = torch.randn(size, NUM_CLASSES, generator=generator)
        targets = torch.randint(0, NUM_CLASSES, (size,), generator=generator)
        batches.append(ClassificationOutput(torch.tensor(0.0), logits, targets))
    return batches


def regression_batches(count=6, size=16, seed=1):
    generator = torch.Generator().manual_seed(seed)
    batches = []
    for _ in range(count):
        targets = torch.randn(size, generator=generator, dtype=torch.float64)
        noise = 0.5 * torch.randn(size, generator=generator, dtype=torch.float64)
        batches.append(RegressionOutput(torch.tensor(0.0), targets + noise, targets))
    return batches


def f1():
    return MulticlassF1Score(num_classes=NUM_CLASSES, average="macro")


def direct(metric, batches):
    for batch in batches:
        metric.update(batch.output, batch.targets)
    return float(metric.compute())


def epoch_value(metric, batches):
    for batch in batches:
        assert metric.update(batch, None) is None  # no per-iteration entry: nothing to sync
    entry = metric.epoch_entry()
    return float(entry.value), entry.count


def test_is_a_numeric_metric_computed_per_epoch():
    metric = TorchMetric(f1())
    assert isinstance(metric, Numeric)
    assert metric.name == "MulticlassF1Score"
    assert metric.computed_per_epoch is True
    assert metric.higher_is_better is True
    assert TorchMetric(R2Score(), name="R2").name == "R2"
    assert TorchMetric(torchmetrics_metric=R2Score()).name == "R2Score"  # API.md's keyword
    assert TorchMetric(torch_mse(), name="MSE").higher_is_better is False


def torch_mse():
    from torchmetrics.regression import MeanSquaredError

    return MeanSquaredError()


def test_macro_f1_equals_torchmetrics_over_the_whole_epoch():
    batches = classification_batches()
    metric = TorchMetric(f1())
    value, count = epoch_value(metric, batches)
    assert value == pytest.approx(direct(f1(), batches), abs=0.0)
    assert count == sum(b.batch_size for b in batches)
    # Not the mean of batch values: macro F1 does not decompose over batches.
    per_batch = [direct(f1(), [b]) for b in batches]
    assert value != pytest.approx(sum(per_batch) / len(per_batch), abs=1e-6)


def test_r2_equals_torchmetrics():
    batches = regression_batches()
    value, _ = epoch_value(TorchMetric(R2Score()), batches)
    assert value == pytest.approx(direct(R2Score(), batches), abs=0.0)


def test_running_value_is_the_local_compute_so_far_and_clear_resets():
    batches = classification_batches()
    metric = TorchMetric(f1())
    assert math.isnan(float(metric.value()))
    for batch in batches[:3]:
        metric.update(batch, None)
    assert float(metric.value()) == pytest.approx(direct(f1(), batches[:3]), abs=0.0)
    metric.clear()
    assert metric.items == 0
    assert math.isnan(float(metric.value()))
    assert math.isnan(float(metric.epoch_entry().value))
    value, _ = epoch_value(metric, batches[3:])
    assert value == pytest.approx(direct(f1(), batches[3:]), abs=0.0)


@pytest.mark.parametrize("recorder", [DefaultRecorder, CompactRecorder], ids=lambda r: r.__name__)
@pytest.mark.parametrize(
    ("make", "batches"),
    [(f1, classification_batches()), (R2Score, regression_batches())],
    ids=["f1_macro", "r2"],
)
def test_mid_epoch_record_round_trip_is_exact(make, batches, recorder):
    """Half the epoch, a checkpoint (through a real recorder), a new metric loads it, the rest."""
    before = TorchMetric(make())
    for batch in batches[:3]:
        before.update(batch, None)
    # The states are exact even where the recorder stores floats in half precision.
    saved = recorder().from_bytes(recorder().to_bytes({"metric": before.to_record()}))["metric"]

    after = TorchMetric(make())
    after.load_record(saved)
    value, count = epoch_value(after, batches[3:])
    assert value == pytest.approx(direct(make(), batches), abs=0.0)
    assert count == sum(b.batch_size for b in batches)


def test_record_of_another_metric_is_refused():
    metric = TorchMetric(f1())
    metric.update(classification_batches(1)[0], None)
    with pytest.raises(RecordError, match="states"):
        TorchMetric(R2Score()).load_record(metric.to_record())
    with pytest.raises(RecordError, match="updates"):
        TorchMetric(R2Score()).load_record({"sum": 1.0})


def test_list_states_round_trip():
    """Metrics that keep every prediction (cat states) are recorded item by item."""
    from torchmetrics.classification import BinaryAUROC

    generator = torch.Generator().manual_seed(3)
    batches = [
        TorchMetricInput(
            torch.rand(8, generator=generator), torch.randint(0, 2, (8,), generator=generator)
        )
        for _ in range(4)
    ]
    before = TorchMetric(BinaryAUROC())
    for batch in batches[:2]:
        before.update(batch, None)
    after = TorchMetric(BinaryAUROC())
    after.load_record(DefaultRecorder().from_bytes(DefaultRecorder().to_bytes(before.to_record())))
    for batch in batches[2:]:
        after.update(batch, None)
    reference = BinaryAUROC()
    for batch in batches:
        reference.update(batch.preds, batch.target)
    assert float(after.epoch_entry().value) == pytest.approx(float(reference.compute()), abs=0.0)


def test_sequence_output_feeds_tokens():
    logits = torch.randn(2, 3, NUM_CLASSES, generator=torch.Generator().manual_seed(4))
    targets = torch.randint(0, NUM_CLASSES, (2, 3), generator=torch.Generator().manual_seed(5))
    metric = TorchMetric(f1())
    metric.update(SequenceOutput(torch.tensor(0.0), logits, None, targets), None)
    reference = f1()
    reference.update(logits.reshape(-1, NUM_CLASSES), targets.reshape(-1))
    assert float(metric.epoch_entry().value) == pytest.approx(float(reference.compute()), abs=0.0)
    assert metric.items == 6


def test_errors_are_clear():
    with pytest.raises(TypeError, match=r"torchmetrics\.Metric"):
        TorchMetric(lambda preds, target: 0)
    per_class = TorchMetric(MulticlassF1Score(num_classes=NUM_CLASSES, average=None))
    per_class.update(classification_batches(1)[0], None)
    with pytest.raises(ValueError, match="one number per epoch"):
        per_class.epoch_entry()
    with pytest.raises(TypeError, match="TorchMetricInput"):
        TorchMetric(f1()).update(object(), None)

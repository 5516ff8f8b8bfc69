"""docs/burn.md, Metrics: the rows that say "same", each metric fed as Burn's learner feeds it
(its step output, adapted) and checked against a value computed by hand."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from burnish.train import ClassificationOutput, MultiLabelClassificationOutput, SequenceOutput
from burnish.train.metric import (
    AccuracyMetric,
    AucPrMetric,
    AurocMetric,
    BleuScore,
    BleuSmoothing,
    CharErrorRate,
    ConfusionStatsInput,
    CpuMemory,
    CpuUse,
    CudaMetric,
    DiceMetric,
    DiceMetricConfig,
    FBetaScoreMetric,
    HammingScore,
    IterationSpeedMetric,
    LearningRateMetric,
    LossInput,
    LossMetric,
    Metric,
    MetricEntry,
    MetricMetadata,
    Numeric,
    NumericEntry,
    PerplexityMetric,
    PrecisionMetric,
    Progress,
    PsnrMetric,
    PsnrMetricConfig,
    RecallMetric,
    RougeLScore,
    SsimMetric,
    SsimMetricConfig,
    TopKAccuracyMetric,
    WordErrorRate,
    adapt,
)

from tests.docs.burn_rows import row

OUTPUT = torch.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 2.0], [0.0, 2.0, 1.0]])
TARGETS = torch.tensor([0, 1, 0, 2])  # argmax right on items 0 and 1; top-2 right on all


def metadata(lr: float | None = 0.01) -> MetricMetadata:
    return MetricMetadata(Progress(4, 8), 1, 1, 1, lr)


def value(metric, item) -> float:
    metric.update(item, metadata())
    return float(metric.value())


@row(
    "AccuracyMetric, LossMetric, TopKAccuracyMetric, PrecisionMetric, RecallMetric, "
    "FBetaScoreMetric, HammingScore, PerplexityMetric, LearningRateMetric, "
    "IterationSpeedMetric, CpuUse, CpuMemory, CudaMetric"
)
def test_burns_metrics_on_a_classification_output():
    item = ClassificationOutput(torch.tensor(0.7), OUTPUT, TARGETS)
    assert value(AccuracyMetric(), item) == pytest.approx(50.0)  # percent, as Burn
    assert value(LossMetric(), item) == pytest.approx(0.7)
    assert value(TopKAccuracyMetric(2), item) == pytest.approx(100.0)
    # Micro precision/recall/F1 over top-1 predictions: 2 right of 4.
    for metric in (
        PrecisionMetric.multiclass(1, "micro"),
        RecallMetric.multiclass(1, "micro"),
        FBetaScoreMetric.multiclass(1.0, 1, "micro"),
    ):
        assert value(metric, item) == pytest.approx(50.0), metric.name
    perplexity = math.exp(F.cross_entropy(OUTPUT, TARGETS).item())
    assert value(PerplexityMetric(), item) == pytest.approx(perplexity, rel=1e-5)
    assert value(LearningRateMetric(), item) == pytest.approx(0.01)
    multi = MultiLabelClassificationOutput(
        torch.tensor(0.1), torch.tensor([[0.9, 0.2], [0.4, 0.7]]), torch.tensor([[1, 1], [0, 1]])
    )
    assert value(HammingScore(), multi) == pytest.approx(75.0)  # 3 of 4 labels right
    assert value(IterationSpeedMetric(), item) >= 0.0
    assert 0.0 <= value(CpuUse(), item) <= 100.0 * (torch.get_num_threads() + 64)
    assert value(CpuMemory(), item) > 0.0  # this process's memory, in GB
    with pytest.warns(RuntimeWarning, match="CUDA") if not torch.cuda.is_available() else _none():
        cuda = CudaMetric()
        entry = cuda.update(item, metadata())
    assert entry is None or isinstance(entry, MetricEntry)


class _none:
    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False


@row("AurocMetric::binary(), ::multiclass(reduction), ::multilabel(reduction)")
def test_auroc_forms_over_the_epoch():
    # scikit-learn's classic example: scores .1 .4 .35 .8 for labels 0 0 1 1 -> 0.75.
    binary = AurocMetric.binary()
    binary.update(
        ConfusionStatsInput(torch.tensor([[0.1], [0.4]]), torch.tensor([[0], [0]])), metadata()
    )
    binary.update(
        ConfusionStatsInput(torch.tensor([[0.35], [0.8]]), torch.tensor([[1], [1]])), metadata()
    )
    assert float(binary.value()) == pytest.approx(75.0)  # over the epoch, not per batch
    scores = torch.tensor([[0.1, 0.9], [0.4, 0.6], [0.35, 0.65], [0.8, 0.2]])
    targets = torch.tensor([[0, 1], [0, 1], [1, 0], [1, 0]])
    multiclass = AurocMetric.multiclass("macro")
    assert value(multiclass, ConfusionStatsInput(scores, targets.bool())) == pytest.approx(75.0)
    multilabel = AurocMetric.multilabel("micro")
    assert 0.0 <= value(multilabel, ConfusionStatsInput(scores, targets.bool())) <= 100.0


def sequence(predicted: list[list[int]], targets: list[list[int]], vocab: int = 6):
    logits = F.one_hot(torch.tensor(predicted), vocab).float()
    return SequenceOutput(torch.tensor(0.0), logits, None, torch.tensor(targets))


@row("AucPrMetric, CharErrorRate, WordErrorRate, BleuScore (with BleuSmoothing), RougeLScore")
def test_sequence_metrics_and_auc_pr():
    right = sequence([[1, 2, 3, 4, 5]], [[1, 2, 3, 4, 5]])
    assert value(CharErrorRate(), right) == pytest.approx(0.0)
    assert value(WordErrorRate(), right) == pytest.approx(0.0)
    assert value(BleuScore(), right) == pytest.approx(100.0)
    assert value(RougeLScore(), right) == pytest.approx(100.0)
    one_wrong = sequence([[1, 2, 0, 4, 5]], [[1, 2, 3, 4, 5]])
    assert value(CharErrorRate(), one_wrong) == pytest.approx(20.0)  # 1 edit / 5, percent
    smoothed = BleuScore(smoothing=BleuSmoothing.add_epsilon(0.1))
    assert 0.0 < value(smoothed, one_wrong) < 100.0
    # Average precision: positives ranked 1st and 3rd -> (1/1 + 2/3) / 2.
    auc_pr = AucPrMetric.binary()
    scores, labels = torch.tensor([[0.9], [0.8], [0.7]]), torch.tensor([[1], [0], [1]])
    assert value(auc_pr, ConfusionStatsInput(scores, labels.bool())) == pytest.approx(
        100 * (1 + 2 / 3) / 2
    )


@row("vision::{PsnrMetric, SsimMetric, DiceMetric<D>} and their *Config")
def test_vision_metrics():
    from burnish.train.metric import DiceInput, PsnrInput, SsimInput

    image = torch.rand(2, 1, 16, 16, generator=torch.Generator().manual_seed(0))
    noisy = (image + 0.1).clamp(0, 1)
    mse = F.mse_loss(noisy, image, reduction="none").mean(dim=(1, 2, 3))
    psnr = (10 * torch.log10(1.0 / mse)).mean().item()
    assert value(PsnrMetric(PsnrMetricConfig(1.0)), PsnrInput(noisy, image)) == pytest.approx(
        psnr, rel=1e-4
    )
    assert value(SsimMetric(SsimMetricConfig(1.0)), SsimInput(image, image)) == pytest.approx(1.0)
    mask = torch.zeros(1, 2, 4, 4)
    mask[:, 1, :2] = 1.0
    mask[:, 0, 2:] = 1.0
    half = mask.clone()
    half[:, 1, 1] = 0.0  # the foreground predicted on 4 of its 8 pixels
    dice = DiceMetric(DiceMetricConfig(), dims=4)
    assert value(dice, DiceInput(half, mask)) == pytest.approx(2 * 4 / (4 + 8), rel=1e-5)


class HalfLoss(Numeric):
    """A metric written to Burn's traits: `Metric` (update/clear) and `Numeric` (value).

    Burn implements both traits; here `Numeric` is a `Metric` already, so the class names
    `Numeric` alone (`class HalfLoss(Metric, Numeric)` has no consistent MRO).
    """

    name = "HalfLoss"

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def update(self, item, metadata):
        loss = adapt(item, LossInput).loss
        self.total += float(loss) / 2
        self.count += 1
        return NumericEntry(float(loss) / 2, 1)

    def clear(self):
        self.total, self.count = 0.0, 0

    def value(self):
        return torch.tensor(self.total / max(self.count, 1))


@row("Metric, Numeric, MetricEntry, NumericEntry, MetricMetadata, Adaptor")
def test_a_metric_written_to_burns_traits():
    metric = HalfLoss()
    assert isinstance(metric, Metric)
    entry = metric.update(ClassificationOutput(torch.tensor(0.8), OUTPUT, TARGETS), metadata())
    assert isinstance(entry, NumericEntry) and entry.value == pytest.approx(0.4)
    assert float(metric.value()) == pytest.approx(0.4)
    assert NumericEntry.deserialize(entry.serialize()).value == pytest.approx(0.4)
    metric.clear()
    assert float(metric.value()) == 0.0


@row("CpuTemperature::new()")
def test_cpu_temperature(tmp_path):
    from burnish.train.metric import CpuTemperature

    zone = tmp_path / "class" / "thermal" / "thermal_zone0"
    zone.mkdir(parents=True)
    (zone / "temp").write_text("45500\n")  # millidegrees, as Linux writes them
    metric = CpuTemperature(sysfs_root=tmp_path)
    assert metric.name == "CPU Temperature"
    assert value(metric, None) == pytest.approx(45.5)
    with pytest.warns(RuntimeWarning, match="no CPU temperature sensor"):
        missing = CpuTemperature(sysfs_root=tmp_path / "none")
        assert math.isnan(value(missing, None))  # Burn logs NaN without a sensor

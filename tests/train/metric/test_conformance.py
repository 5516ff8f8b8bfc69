"""One table every numeric metric passes (optax style).

For each metric, on three batches of unequal size:
- the epoch value equals the reference: the batch-size-weighted mean of a reference
  implementation's per-batch values (sklearn or closed form), or the pooled value where the
  metric pools (perplexity, padded accuracy, precision/recall/F-beta);
- `update` returns a `NumericEntry` whose value is a device tensor and whose count is the
  batch size, and runs without any host read or value-dependent op;
- `clear` starts a new epoch;
- the mid-epoch record survives JSON and resumes the epoch exactly.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from sklearn import metrics as skm

from burnish.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    ConfusionStatsInput,
    FBetaScoreMetric,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    Numeric,
    NumericEntry,
    PerplexityInput,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)

from tests.helpers import assert_close
from tests.train.metric import reference
from tests.train.metric.helpers import metadata, no_host_sync, weighted_mean

BATCH_SIZES = (5, 3, 8)
NUM_CLASSES = 4
PAD = 3


@dataclasses.dataclass
class Case:
    name: str
    metric: Callable[[], Numeric]
    batch: Callable[[torch.Generator, int], Any]
    reference: Callable[[Any], float]  # one batch's value
    pooled: Callable[[list[Any]], float] | None = None  # epoch value if not a weighted mean


def _scores_classes(input_type):
    def make(gen: torch.Generator, n: int):
        scores = torch.randn(n, NUM_CLASSES, generator=gen)
        return input_type(scores, torch.randint(0, NUM_CLASSES, (n,), generator=gen))

    return make


def _confusion(kind: str):
    def make(gen: torch.Generator, n: int):
        if kind == "binary":
            scores = torch.rand(n, 1, generator=gen)
            return ConfusionStatsInput(scores, torch.rand(n, 1, generator=gen) > 0.5)
        scores = torch.rand(n, NUM_CLASSES, generator=gen)
        if kind == "multiclass":
            labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
            return ConfusionStatsInput(scores, F.one_hot(labels, NUM_CLASSES).bool())
        return ConfusionStatsInput(scores, torch.rand(n, NUM_CLASSES, generator=gen) > 0.5)

    return make


def _sk_confusion(score: str, kind: str, average: str, **kwargs):
    """The pooled (epoch-wide) value of tests/train/metric/reference.py, from sklearn."""
    rule = {"top_k": 1, "threshold": None} if kind == "multiclass" else {}
    reduction = "micro" if kind == "binary" else average

    def pooled(batches: list[ConfusionStatsInput]) -> float:
        return reference.confusion(batches, score, reduction, **rule, **kwargs)

    return pooled


def _accuracy(data) -> float:
    return 100 * skm.accuracy_score(data.targets.numpy(), data.outputs.argmax(1).numpy())


def _padded_accuracy_pooled(batches) -> float:
    hits = total = 0
    for data in batches:
        keep = data.targets.numpy() != PAD
        hits += (data.outputs.argmax(1).numpy() == data.targets.numpy())[keep].sum()
        total += keep.sum()
    return 100 * hits / total


def _padded_accuracy(data) -> float:
    return _padded_accuracy_pooled([data])


def _top2(data) -> float:
    labels = list(range(NUM_CLASSES))
    targets, outputs = data.targets.numpy(), data.outputs.numpy()
    return 100 * skm.top_k_accuracy_score(targets, outputs, k=2, labels=labels)


def _loss_batch(gen: torch.Generator, n: int) -> LossInput:
    return LossInput(torch.rand(n, generator=gen) * 3)  # per-item losses


def _hamming_batch(gen: torch.Generator, n: int) -> HammingScoreInput:
    outputs = torch.rand(n, NUM_CLASSES, generator=gen)
    return HammingScoreInput(outputs, (torch.rand(n, NUM_CLASSES, generator=gen) > 0.5).long())


def _hamming(data: HammingScoreInput) -> float:
    predicted = (data.outputs.numpy() > 0.5).astype(int)
    return 100 * (1 - skm.hamming_loss(data.targets.numpy(), predicted))


def _perplexity_pooled(batches) -> float:
    outputs = torch.cat([b.outputs for b in batches]).double()
    targets = torch.cat([b.targets for b in batches])
    return float(torch.exp(F.cross_entropy(outputs, targets, ignore_index=PAD)))


CASES = [
    Case("accuracy", AccuracyMetric, _scores_classes(AccuracyInput), _accuracy),
    Case(
        "accuracy-pad",
        lambda: AccuracyMetric(pad_token=PAD),
        _scores_classes(AccuracyInput),
        _padded_accuracy,
        _padded_accuracy_pooled,
    ),
    Case("top2", lambda: TopKAccuracyMetric(2), _scores_classes(TopKAccuracyInput), _top2),
    Case("loss", LossMetric, _loss_batch, lambda d: float(d.loss.double().mean())),
    Case("hamming", HammingScore, _hamming_batch, _hamming),
    Case(
        "perplexity-pad",
        lambda: PerplexityMetric(pad_token=PAD),
        _scores_classes(PerplexityInput),
        lambda d: _perplexity_pooled([d]),
        _perplexity_pooled,
    ),
]
for _kind in ("binary", "multiclass", "multilabel"):
    for _avg in ("micro", "macro", "weighted") if _kind != "binary" else ("binary",):
        _args = {} if _kind == "binary" else {"class_reduction": _avg}
        for _score, _build in [
            ("precision", lambda k, a: getattr(PrecisionMetric, k)(**a)),
            ("recall", lambda k, a: getattr(RecallMetric, k)(**a)),
            ("f2", lambda k, a: getattr(FBetaScoreMetric, k)(2.0, **a)),
        ]:
            _beta = 2.0 if _score == "f2" else 1.0
            _pooled = _sk_confusion("fbeta" if _beta == 2.0 else _score, _kind, _avg, beta=_beta)
            CASES.append(
                Case(
                    f"{_score}-{_kind}-{_avg}",
                    lambda k=_kind, a=_args, b=_build: b(k, a),
                    _confusion(_kind),
                    lambda data, p=_pooled: p([data]),
                    _pooled,
                )
            )


def _batches(case: Case, seed: int = 0) -> list[Any]:
    gen = torch.Generator().manual_seed(seed)
    return [case.batch(gen, n) for n in BATCH_SIZES]


def _expected(case: Case, batches: list[Any]) -> float:
    if case.pooled is not None:
        return case.pooled(batches)
    return weighted_mean([case.reference(b) for b in batches], list(BATCH_SIZES))


def _run(metric: Numeric, batches: list[Any]) -> list[NumericEntry]:
    return [metric.update(b, metadata(i + 1)) for i, b in enumerate(batches)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_epoch_value_matches_reference(case: Case) -> None:
    metric, batches = case.metric(), _batches(case)
    entries = _run(metric, batches)
    assert_close(float(metric.value()), float(_expected(case, batches)), atol=1e-6, rtol=1e-6)
    for entry, data in zip(entries, batches):
        expected = float(case.reference(data))  # NaN where the batch's value is undefined
        assert float(entry.value) == pytest.approx(expected, rel=1e-5, abs=1e-4, nan_ok=True)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_update_returns_device_entries_without_host_sync(
    case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    metric, batches = case.metric(), _batches(case)
    with no_host_sync(monkeypatch):
        entries = _run(metric, batches)
        value = metric.value()
    assert [e.count for e in entries] == list(BATCH_SIZES)
    for entry in entries:
        assert isinstance(entry.value, torch.Tensor) and entry.value.dim() == 0
    assert isinstance(value, torch.Tensor) and value.dim() == 0
    assert value.dtype == torch.float64


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_clear_starts_a_new_epoch(case: Case) -> None:
    metric, batches = case.metric(), _batches(case)
    _run(metric, batches)
    metric.clear()
    assert torch.isnan(metric.value())
    fresh = _batches(case, seed=1)
    _run(metric, fresh)
    assert_close(float(metric.value()), float(_expected(case, fresh)), atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_record_resumes_the_epoch_exactly(case: Case) -> None:
    batches = _batches(case)
    uninterrupted = case.metric()
    _run(uninterrupted, batches)

    first = case.metric()
    _run(first, batches[:1])
    record = json.loads(json.dumps(first.to_record()))  # plain numbers, any recorder keeps them
    resumed = case.metric()
    resumed.load_record(record)
    _run(resumed, batches[1:])
    assert float(resumed.value()) == float(uninterrupted.value())


def test_every_numeric_builtin_is_in_the_table() -> None:
    import burnish.train.metric as metric_module

    host_side = {"LearningRateMetric", "IterationSpeedMetric", "ThroughputMetric", "CpuUse"}
    host_side |= {"CpuMemory", "CpuTemperature"}  # read from the host: test_cpu_temperature.py
    host_side.add("TorchMetric")  # computed once per epoch; held to torchmetrics in its own file
    host_side.add("SkippedStepsMetric")  # fed the learner's step flags, not items: test_non_finite
    # One value per epoch, over every score of the epoch: test_rank_metrics.py.
    host_side |= {"AurocMetric", "AucPrMetric"}
    # Sequence and vision metrics: the same properties in their own files, against their own
    # references (test_sequence_metrics.py, test_vision_metrics.py, test_ms_ssim.py).
    host_side |= {"CharErrorRate", "WordErrorRate", "BleuScore", "RougeLScore"}
    host_side |= {"PsnrMetric", "SsimMetric", "DiceMetric", "MsSsimMetric"}
    numeric = {
        name
        for name in metric_module.__all__
        if isinstance(getattr(metric_module, name), type)
        and issubclass(getattr(metric_module, name), Numeric)
        and getattr(metric_module, name).__module__ != "burnish.train.metric.base"
        and name != "StatefulNumeric"
    }
    covered = {type(case.metric()).__name__ for case in CASES}
    assert numeric - host_side == covered


def test_the_sync_detector_catches_host_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    reads = [
        ("Tensor.__float__", lambda: float(torch.tensor(1.0))),
        ("aten::nonzero", lambda: torch.tensor([1, 0, 1]).nonzero()),
        ("aten::index", lambda: torch.arange(3.0)[torch.tensor([True, False, True])]),
    ]
    for what, read in reads:
        with pytest.raises(AssertionError, match=re.escape(what)), no_host_sync(monkeypatch):
            read()

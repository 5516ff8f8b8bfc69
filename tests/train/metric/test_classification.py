"""Precision, recall and F-beta on Burn's fixtures, with the closed forms of Burn's tests."""

from __future__ import annotations

import math

import pytest
import torch

from burnish.train.metric import (
    ClassReduction,
    ConfusionStatsInput,
    FBetaScoreMetric,
    PrecisionMetric,
    RecallMetric,
)

from tests.train.metric.helpers import (
    BINARY_SCORES,
    BINARY_TARGETS,
    MULTICLASS_SCORES,
    MULTICLASS_TARGETS,
    MULTILABEL_SCORES,
    MULTILABEL_TARGETS,
    metadata,
)

BINARY = ConfusionStatsInput(BINARY_SCORES, BINARY_TARGETS.bool())
MULTICLASS = ConfusionStatsInput(MULTICLASS_SCORES, MULTICLASS_TARGETS.bool())
MULTILABEL = ConfusionStatsInput(MULTILABEL_SCORES, MULTILABEL_TARGETS.bool())


def _value(metric, data) -> float:
    metric.update(data, metadata())
    return float(metric.value())


@pytest.mark.parametrize(
    ("metric", "data", "expected"),
    [
        (PrecisionMetric.binary(0.5), BINARY, 0.5),
        (PrecisionMetric.multiclass(1, ClassReduction.Micro), MULTICLASS, 3 / 5),
        (PrecisionMetric.multiclass(2, "micro"), MULTICLASS, 4 / 10),
        (PrecisionMetric.multiclass(1, "macro"), MULTICLASS, (0.5 + 0.5 + 1.0) / 3),
        (PrecisionMetric.multiclass(2, "macro"), MULTICLASS, (0.5 + 1 / 4 + 0.5) / 3),
        (PrecisionMetric.multilabel(0.5, "micro"), MULTILABEL, 5 / 8),
        (PrecisionMetric.multilabel(0.5, "macro"), MULTILABEL, (2 / 3 + 2 / 3 + 0.5) / 3),
        (RecallMetric.binary(0.5), BINARY, 0.5),
        (RecallMetric.multiclass(1, "micro"), MULTICLASS, 3 / 5),
        (RecallMetric.multiclass(2, "micro"), MULTICLASS, 4 / 5),
        (RecallMetric.multiclass(1, "macro"), MULTICLASS, (0.5 + 1.0 + 0.5) / 3),
        (RecallMetric.multiclass(2, "macro"), MULTICLASS, (1.0 + 1.0 + 0.5) / 3),
        (RecallMetric.multilabel(0.5, "micro"), MULTILABEL, 5 / 9),
        (RecallMetric.multilabel(0.5, "macro"), MULTILABEL, (0.5 + 1.0 + 1 / 3) / 3),
        (FBetaScoreMetric.binary(1.0, 0.5), BINARY, 0.5),
        (FBetaScoreMetric.binary(2.0, 0.5), BINARY, 0.5),
        (FBetaScoreMetric.multiclass(1.0, 1, "micro"), MULTICLASS, 3 / 5),
        (FBetaScoreMetric.multiclass(1.0, 2, "micro"), MULTICLASS, 2 / (5 / 4 + 10 / 4)),
        (FBetaScoreMetric.multiclass(1.0, 1, "macro"), MULTICLASS, (0.5 + 2 / 3 + 2 / 3) / 3),
        (FBetaScoreMetric.multiclass(1.0, 2, "macro"), MULTICLASS, (2 / 3 + 2 / 5 + 0.5) / 3),
        (FBetaScoreMetric.multiclass(2.0, 1, "micro"), MULTICLASS, 3 / 5),
        (FBetaScoreMetric.multiclass(2.0, 2, "micro"), MULTICLASS, 20 / 30),
        (FBetaScoreMetric.multiclass(2.0, 1, "macro"), MULTICLASS, (0.5 + 5 / 6 + 5 / 9) / 3),
        (FBetaScoreMetric.multiclass(2.0, 2, "macro"), MULTICLASS, (5 / 6 + 5 / 8 + 0.5) / 3),
        (FBetaScoreMetric.multilabel(1.0, 0.5, "micro"), MULTILABEL, 2 / (9 / 5 + 8 / 5)),
        (
            FBetaScoreMetric.multilabel(1.0, 0.5, "macro"),
            MULTILABEL,
            (2 / (2 + 3 / 2) + 2 / (1 + 3 / 2) + 2 / (3 + 2)) / 3,
        ),
        (FBetaScoreMetric.multilabel(2.0, 0.5, "micro"), MULTILABEL, 5 / (4 * 9 / 5 + 8 / 5)),
        (
            FBetaScoreMetric.multilabel(2.0, 0.5, "macro"),
            MULTILABEL,
            (5 / (8 + 3 / 2) + 5 / (4 + 3 / 2) + 5 / (12 + 2)) / 3,
        ),
    ],
    ids=lambda v: v.name if hasattr(v, "name") else None,
)
def test_burn_fixtures(metric, data, expected: float) -> None:
    assert _value(metric, data) == pytest.approx(100 * expected)


def test_default_is_binary_at_half_with_macro() -> None:
    assert PrecisionMetric().name == PrecisionMetric.binary(0.5).name
    assert PrecisionMetric().name == "Precision @ Threshold(0.5) [Macro]"


def test_names_are_burns_and_unique_per_setting() -> None:
    assert RecallMetric.multiclass(2, "micro").name == "Recall @ TopK(2) [Micro]"
    assert RecallMetric.multiclass(2, "Micro").class_reduction is ClassReduction.MICRO
    assert FBetaScoreMetric.multilabel(1.0).name == "FBetaScore (1) @ Threshold(0.5) [Macro]"
    names = {
        PrecisionMetric.multiclass(1).name,
        PrecisionMetric.multiclass(2).name,
        PrecisionMetric.binary(0.75).name,
        PrecisionMetric.binary(0.5).name,
    }
    assert len(names) == 4


def test_the_epoch_pools_confusion_counts_not_batch_ratios() -> None:
    """Burn 0.22: the ratio of the epoch's counts. A batch with nothing predicted adds its
    positives to recall's denominator and nothing to precision's; neither becomes NaN."""
    precision, recall = PrecisionMetric.binary(0.5), RecallMetric.binary(0.5)
    nothing = ConfusionStatsInput(torch.zeros(3, 1), torch.ones(3, 1, dtype=torch.bool))
    for metric in (precision, recall):
        metric.update(BINARY, metadata())  # tp 1, predicted 2, positives 2
        entry = metric.update(nothing, metadata(2))  # tp 0, predicted 0, positives 3
    assert float(entry.value) == 0.0  # the batch's recall
    assert float(precision.value()) == 50.0  # 1 / 2
    assert float(recall.value()) == 20.0  # 1 / 5, not (50 * 5 + 0 * 3) / 8


def test_zero_denominators_count_as_zero_and_absent_classes_are_left_out() -> None:
    # Class 0: predicted, never a target (precision 0, recall 0/0 -> 0); class 1: right;
    # class 2: a target never predicted (precision 0/0 -> 0); class 3 never occurs.
    scores = torch.tensor([[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 1.0, 0, 0]])
    targets = torch.tensor([[0, 0, 1, 0], [0, 1, 0, 0], [0, 1, 0, 0]]).bool()
    data = ConfusionStatsInput(scores, targets)
    expected = {
        PrecisionMetric.multiclass(1, "macro"): (0 + 1 + 0) / 3,
        RecallMetric.multiclass(1, "macro"): (0 + 1 + 0) / 3,
        FBetaScoreMetric.multiclass(1.0, 1, "macro"): (0 + 1 + 0) / 3,
        PrecisionMetric.multiclass(1, "micro"): 2 / 3,
        PrecisionMetric.multiclass(1, "weighted"): (0 * 0 + 1 * 2 + 0 * 1) / 3,
        RecallMetric.multiclass(1, ClassReduction.WEIGHTED): (1 * 2 + 0 * 1) / 3,
    }
    for metric, value in expected.items():
        assert _value(metric, data) == pytest.approx(100 * value), metric.name


def test_an_epoch_where_nothing_occurs_has_no_value() -> None:
    negatives = ConfusionStatsInput(torch.zeros(4, 2), torch.zeros(4, 2, dtype=torch.bool))
    for metric in (
        PrecisionMetric.multilabel(0.5, "macro"),
        RecallMetric.multilabel(0.5, "micro"),
        FBetaScoreMetric.multilabel(2.0, 0.5, "weighted"),
    ):
        assert math.isnan(_value(metric, negatives)), metric.name
        assert math.isnan(float(type(metric)().value()))  # no batch at all


def test_weighted_is_named_and_validated() -> None:
    assert RecallMetric.multilabel(0.5, "weighted").name == "Recall @ Threshold(0.5) [Weighted]"
    assert ClassReduction("weighted") is ClassReduction.WEIGHTED


def test_invalid_settings_are_explained() -> None:
    with pytest.raises(ValueError, match="a `threshold` or a `top_k`, not both"):
        PrecisionMetric(threshold=0.5, top_k=1)
    with pytest.raises(ValueError, match=r"`top_k` must be >= 1. Received: top_k=0"):
        RecallMetric.multiclass(0)
    with pytest.raises(ValueError, match=r"`beta` must be > 0. Received: beta=0"):
        FBetaScoreMetric.binary(0)
    with pytest.raises(ValueError, match=r"`class_reduction` must be .*Received: .*'average'"):
        PrecisionMetric.multiclass(1, "average")
    with pytest.raises(ValueError, match="same shape"):
        PrecisionMetric().update(ConfusionStatsInput(torch.zeros(3, 2), BINARY.targets), None)
    with pytest.raises(ValueError, match="top_k=4 exceeds the number of classes"):
        PrecisionMetric.multiclass(4).update(MULTICLASS, metadata())


def test_top_1_breaks_ties_as_argmax_does() -> None:
    """On tied logits top-1 precision was 0 (topk picked a later class) while accuracy was 100."""
    scores = torch.zeros(4, 40)
    targets = torch.nn.functional.one_hot(torch.zeros(4, dtype=torch.long), 40).bool()
    data = ConfusionStatsInput(scores, targets)
    for metric in (
        PrecisionMetric.multiclass(1, "micro"),
        RecallMetric.multiclass(1, "macro"),
        FBetaScoreMetric.multiclass(2.0, 1, "weighted"),
    ):
        assert _value(metric, data) == 100.0, metric.name
    # top-2 of all-tied rows: classes 0 and 1
    assert _value(PrecisionMetric.multiclass(2, "micro"), data) == 50.0


def test_binary_metrics_refuse_two_class_logits_and_accuracy_refuses_one_column():
    """A binary task's two output shapes each feed the metrics that read them right; the wrong
    pairing fails with the fix instead of a plausible wrong number (a trial's finding)."""
    import pytest

    from burnish.train import ClassificationOutput
    from burnish.train.metric import AccuracyMetric, FBetaScoreMetric, PrecisionMetric, RecallMetric
    from burnish.train.metric.base import MetricMetadata, Progress

    metadata = MetricMetadata(Progress(4, 4), 1, 1, 1)
    targets = torch.tensor([1, 1, 0, 0])
    two = ClassificationOutput(torch.tensor(0.0), torch.tensor([[0.1, 0.9]] * 4), targets)
    one = ClassificationOutput(
        torch.tensor(0.0), torch.tensor([[0.9], [0.8], [0.1], [0.2]]), targets
    )
    for metric in (PrecisionMetric.binary(), RecallMetric.binary(), FBetaScoreMetric.binary(1.0)):
        with pytest.raises(ValueError, match=r"one score column \[batch_size, 1\].*softmax"):
            metric.update(two, metadata)
        metric.update(one, metadata)
        assert float(metric.value()) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="argmax: one score column"):
        AccuracyMetric().update(one, metadata)
    assert PrecisionMetric.multilabel().binary_column is False  # several columns stay allowed

"""AUROC and AUC-PR over the whole epoch (Burn main): against scikit-learn, Burn's fixtures,
edge cases, host syncs and a checkpoint round trip. Two ranks: test_epoch_metrics_ranks.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score, roc_auc_score

from burnish.record import CompactRecorder, DefaultRecorder
from burnish.train import ClassificationOutput, MultiLabelClassificationOutput
from burnish.train.metric import AucPrMetric, AurocMetric, ConfusionStatsInput

from tests.train.metric.helpers import no_host_sync

METRICS = {"auroc": (AurocMetric, roc_auc_score), "aucpr": (AucPrMetric, average_precision_score)}
BATCHES = ((0, 7), (7, 8), (8, 30), (30, 41))  # one of size 1


def _epoch(metric, scores: np.ndarray, truth: np.ndarray) -> float:
    for start, end in BATCHES:
        metric.update(
            ConfusionStatsInput(torch.tensor(scores[start:end]), torch.tensor(truth[start:end])),
            None,
        )
    return float(metric.epoch_entry().value)


def _reference(kind: str, scores: np.ndarray, truth: np.ndarray, reduction: str) -> float:
    """scikit-learn per column, undefined columns left out (Burn), 50 % when none is defined."""
    score = METRICS[kind][1]
    if reduction == "micro":
        scores, truth = scores.reshape(-1, 1), truth.reshape(-1, 1)
    positives = truth.sum(0)
    defined = positives > 0 if kind == "aucpr" else (positives > 0) & (positives < len(truth))
    if not defined.any():
        return 50.0
    values = np.array([score(truth[:, c], scores[:, c]) for c in np.flatnonzero(defined)])
    weights = positives[defined] if reduction == "weighted" else np.ones(len(values))
    return 100.0 * float((values * weights).sum() / weights.sum())


def _data(seed: int, columns: int, ties: bool, one_hot: bool):
    rng = np.random.default_rng(seed)
    n = BATCHES[-1][1]
    scores = rng.integers(0, 4, (n, columns)) / 3.0 if ties else rng.normal(size=(n, columns))
    if one_hot:
        truth = np.eye(columns, dtype=bool)[rng.integers(0, columns, n)]
    else:
        truth = rng.random((n, columns)) > 0.6
    return scores, truth


TASKS = [("binary", 1, "macro")] + [
    (task, columns, reduction)
    for task, columns in (("multiclass", 4), ("multilabel", 3))
    for reduction in ("macro", "micro", "weighted")
]


@pytest.mark.parametrize("kind", sorted(METRICS))
@pytest.mark.parametrize(("task", "columns", "reduction"), TASKS)
@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("seed", range(3))
def test_epoch_value_equals_sklearn(kind, task, columns, reduction, ties, seed) -> None:
    scores, truth = _data(seed, columns, ties, one_hot=task == "multiclass")
    build = METRICS[kind][0]
    metric = build.binary() if task == "binary" else getattr(build, task)(reduction)
    value = _epoch(metric, scores, truth)
    assert value == pytest.approx(_reference(kind, scores, truth, reduction), abs=1e-6)


# burn-train/src/metric/auroc.rs tests (inputs and expected values computed there).
_MULTICLASS = (
    [[0.79, 0.41, 0.16], [0.25, 0.93, 0.78], [0.61, 0.09, 0.21], [0.9, 0.31, 0.33],
     [0.16, 0.82, 0.57], [0.57, 0.18, 0.63]],
    [[1, 0, 0], [1, 0, 0], [1, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0]],
)  # fmt: skip
_MULTILABEL = (
    [[0.11, 0.57, 0.9], [0.13, 0.66, 0.37], [0.71, 0.85, 0.6], [0.29, 0.69, 0.49],
     [0.68, 0.45, 0.25], [0.33, 0.36, 0.31]],
    [[1, 1, 1], [0, 0, 1], [0, 1, 0], [1, 1, 0], [0, 1, 1], [1, 1, 1]],
)  # fmt: skip
_BINARY = ([[0.34], [0.64], [0.12], [0.19], [0.53], [0.38]], [[0], [0], [0], [0], [1], [1]])


@pytest.mark.parametrize(
    ("data", "reduction", "expected"),
    [
        (_BINARY, "macro", 0.75),
        (_BINARY, "micro", 0.75),
        (_MULTICLASS, "macro", 0.5666666666666667),
        (_MULTICLASS, "micro", 0.6458333333333333),
        (_MULTILABEL, "macro", 0.2907407407407407),
        (_MULTILABEL, "micro", 0.3611111111111111),
        (([[0.5, 0.5]] * 4, [[0, 1], [1, 0], [1, 0], [0, 1]]), "macro", 0.5),  # all tied
        (([[0.9], [0.8], [0.7], [0.6]], [[1], [1], [1], [1]]), "macro", 0.5),  # one class
        # Class 2 never occurs: left out, the other two are separated perfectly.
        (
            (
                [[0.9, 0.1, 0.0], [0.2, 0.8, 0.0], [0.7, 0.3, 0.0], [0.1, 0.6, 0.0]],
                [[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0]],
            ),
            "macro",
            1.0,
        ),
    ],
)
def test_burn_auroc_fixtures(data, reduction: str, expected: float) -> None:
    metric = AurocMetric.multilabel(reduction)
    metric.update(ConfusionStatsInput(torch.tensor(data[0]), torch.tensor(data[1])), None)
    assert float(metric.epoch_entry().value) == pytest.approx(expected * 100.0, abs=1e-9)


def test_names_are_burns() -> None:
    assert AurocMetric().name == AurocMetric.binary().name == "AUROC [Macro]"
    assert AurocMetric.multiclass("micro").name == "AUROC [Micro]"
    assert AucPrMetric.multilabel("macro").name == "AUC-PR [Macro]"
    assert AurocMetric.computed_per_epoch and AucPrMetric.computed_per_epoch


def test_undefined_epochs_report_chance_and_empty_epochs_nan() -> None:
    """Burn: no defined column -> 0.5; an epoch without items has no value at all."""
    for build in (AurocMetric, AucPrMetric):
        metric = build.binary()
        assert math.isnan(float(metric.value()))
        assert math.isnan(float(metric.epoch_entry().value))
        metric.update(ConfusionStatsInput(torch.rand(5, 1), torch.zeros(5, 1)), None)
        assert float(metric.epoch_entry().value) == 50.0


def test_aucpr_counts_a_column_of_positives_only() -> None:
    """AP needs positives only (AUROC needs both classes): all positives give 100 %."""
    data = ConfusionStatsInput(torch.rand(4, 1), torch.ones(4, 1))
    aucpr, auroc = AucPrMetric.binary(), AurocMetric.binary()
    aucpr.update(data, None)
    auroc.update(data, None)
    assert float(aucpr.epoch_entry().value) == 100.0
    assert float(auroc.epoch_entry().value) == 50.0


@pytest.mark.parametrize("build", [AurocMetric, AucPrMetric])
def test_a_nan_score_makes_the_value_nan_and_infinities_rank(build) -> None:
    truth = torch.tensor([[1], [0], [1], [0]])
    metric = build.binary()
    metric.update(ConfusionStatsInput(torch.tensor([[1.0], [0.0], [math.nan], [0.5]]), truth), None)
    assert math.isnan(float(metric.epoch_entry().value))
    metric = build.binary()  # infinite logits are ranked, not NaN (no softmax)
    scores = torch.tensor([[math.inf], [-math.inf], [2.0], [0.5]])
    metric.update(ConfusionStatsInput(scores, truth), None)
    assert float(metric.epoch_entry().value) == 100.0


def test_the_epoch_value_does_not_depend_on_the_batching() -> None:
    scores, truth = _data(7, 3, ties=True, one_hot=False)
    whole = AurocMetric.multilabel("macro")
    whole.update(ConfusionStatsInput(torch.tensor(scores), torch.tensor(truth)), None)
    split = AurocMetric.multilabel("macro")
    assert _epoch(split, scores, truth) == float(whole.epoch_entry().value)


def test_outputs_feed_it() -> None:
    """`ClassificationOutput` gives one-hot truth (one column: the 0/1 targets);
    `MultiLabelClassificationOutput` its labels."""
    logits = torch.tensor([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0], [1.0, 0.0, 2.0], [0.5, 0.4, 0.3]])
    targets = torch.tensor([0, 1, 2, 0])
    metric = AurocMetric.multiclass()
    metric.update(ClassificationOutput(torch.tensor(0.0), logits, targets), None)
    one_hot = np.eye(3)[targets.numpy()]
    expected = 100 * roc_auc_score(one_hot, logits.numpy(), average="macro")
    assert float(metric.epoch_entry().value) == pytest.approx(expected)
    binary = AurocMetric.binary()
    binary.update(
        ClassificationOutput(torch.tensor(0.0), logits[:, :1], targets.clamp(max=1)), None
    )
    expected = 100 * roc_auc_score(targets.clamp(max=1).numpy(), logits[:, 0].numpy())
    assert float(binary.epoch_entry().value) == pytest.approx(expected)
    labels = (torch.rand(4, 3, generator=torch.Generator().manual_seed(0)) > 0.5).long()
    labels[0], labels[1] = 1, 0
    multilabel = AucPrMetric.multilabel("micro")
    multilabel.update(MultiLabelClassificationOutput(torch.tensor(0.0), logits, labels), None)
    expected = 100 * average_precision_score(labels.numpy(), logits.numpy(), average="micro")
    assert float(multilabel.epoch_entry().value) == pytest.approx(expected)


@pytest.mark.parametrize("build", [AurocMetric, AucPrMetric])
def test_update_and_value_never_read_the_device(build, monkeypatch) -> None:
    scores, truth = _data(1, 3, ties=True, one_hot=False)
    metric = build.multilabel("weighted")
    with no_host_sync(monkeypatch):
        for start, end in BATCHES:
            batch = ConfusionStatsInput(
                torch.tensor(scores[start:end]), torch.tensor(truth[start:end])
            )
            assert metric.update(batch, None) is None  # no batch value (Burn: N/A)
        value = metric.value()
    assert value.dim() == 0 and value.dtype == torch.float64


def test_wrong_shapes_are_refused_clearly() -> None:
    with pytest.raises(ValueError, match=r"AurocMetric expects predictions and targets .*\[4, 3\]"):
        AurocMetric().update(ConfusionStatsInput(torch.zeros(4, 3), torch.zeros(4)), None)
    with pytest.raises(ValueError, match=r"AucPrMetric.binary expects one score column.*\[4, 2\]"):
        AucPrMetric.binary().update(ConfusionStatsInput(torch.zeros(4, 2), torch.zeros(4, 2)), None)
    with pytest.raises(ValueError, match="class_reduction"):
        AurocMetric.multiclass("median")


@pytest.mark.parametrize("recorder", [DefaultRecorder, CompactRecorder], ids=lambda r: r.__name__)
@pytest.mark.parametrize("build", [AurocMetric, AucPrMetric])
def test_checkpoint_round_trip_resumes_the_epoch_exactly(build, recorder) -> None:
    """Half an epoch, the state through a real recorder (half precision for Compact: the
    scores are kept as exact bytes), a new metric loads it and sees the rest."""
    scores, truth = _data(3, 4, ties=False, one_hot=True)
    straight = build.multiclass("macro")
    expected = _epoch(straight, scores, truth)
    first = build.multiclass("macro")
    for start, end in BATCHES[:2]:
        first.update(
            ConfusionStatsInput(torch.tensor(scores[start:end]), torch.tensor(truth[start:end])),
            None,
        )
    saved = recorder().from_bytes(recorder().to_bytes({"m": first.to_record()}))["m"]
    resumed = build.multiclass("macro")
    resumed.load_record(saved)
    for start, end in BATCHES[2:]:
        resumed.update(
            ConfusionStatsInput(torch.tensor(scores[start:end]), torch.tensor(truth[start:end])),
            None,
        )
    entry = resumed.epoch_entry()
    assert float(entry.value) == expected and entry.count == BATCHES[-1][1]
    resumed.clear()
    assert math.isnan(float(resumed.value())) and resumed.items == 0


_SCORE = st.floats(allow_nan=True, allow_infinity=True, width=32)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(
            st.lists(_SCORE, min_size=2, max_size=2),
            st.lists(st.booleans(), min_size=2, max_size=2),
        ),
        min_size=0,
        max_size=12,
    ),
    reduction=st.sampled_from(["macro", "micro", "weighted"]),
    cut=st.integers(0, 12),
)
def test_any_scores_give_a_percentage_or_nan_for_a_nan_score(rows, reduction, cut) -> None:
    """Constant, one-class, empty, infinite and NaN inputs never crash; the value is in
    [0, 100], NaN only with a NaN score among defined columns (or no item)."""
    scores = torch.tensor([r[0] for r in rows], dtype=torch.float32).reshape(-1, 2)
    truth = torch.tensor([r[1] for r in rows], dtype=torch.bool).reshape(-1, 2)
    for build in (AurocMetric, AucPrMetric):
        metric = build.multilabel(reduction)
        for part in (slice(0, cut), slice(cut, None)):
            if len(scores[part]):
                metric.update(ConfusionStatsInput(scores[part], truth[part]), None)
        value = float(metric.epoch_entry().value)
        if math.isnan(value):
            assert not rows or bool(scores.isnan().any())
        else:
            assert 0.0 <= value <= 100.0


def test_the_dashboard_value_is_recomputed_once_the_items_grew_by_a_tenth() -> None:
    """`value()` runs at every render; sorting the whole epoch each time would grow with it."""
    metric = AurocMetric.binary()
    truth = torch.tensor([[1], [0]] * 50)
    metric.update(ConfusionStatsInput(torch.rand(100, 1), truth), None)
    first = metric.value()
    metric.update(ConfusionStatsInput(torch.rand(2, 1), torch.tensor([[1], [0]])), None)
    assert metric.value() is first  # 102 items: less than a tenth more
    metric.update(ConfusionStatsInput(torch.rand(10, 1), truth[:10]), None)
    assert metric.value() is not first  # 112 items
    assert float(metric.value()) == float(metric.epoch_entry().value)

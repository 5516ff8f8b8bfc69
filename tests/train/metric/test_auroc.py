"""AUROC: the O(n log n) count against sklearn, ties, single-class batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from burnish.train.metric import AurocInput, AurocMetric
from burnish.train.metric.auroc import binary_auroc

from tests.train.metric.helpers import metadata


@pytest.mark.parametrize("seed", range(5))
def test_binary_auroc_matches_sklearn_with_ties(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, size=40) / 5.0  # many ties
    labels = rng.integers(0, 2, size=40)
    labels[:2] = [0, 1]
    auroc = binary_auroc(torch.tensor(scores), torch.tensor(labels) == 1)
    assert float(auroc) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [  # burn-train auroc.rs tests
        ([[0.1, 0.9], [0.7, 0.3], [0.6, 0.4], [0.2, 0.8]], 100.0),
        ([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], 100.0),
        ([[0.5, 0.5]] * 4, 50.0),  # all tied
    ],
)
def test_burn_fixtures(outputs, expected: float) -> None:
    metric = AurocMetric()
    metric.update(AurocInput(torch.tensor(outputs), torch.tensor([1, 0, 0, 1])), metadata())
    assert float(metric.value()) == pytest.approx(expected)


def test_a_single_class_batch_is_skipped() -> None:
    metric = AurocMetric()
    outputs = torch.tensor([[0.1, 0.9], [0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    metric.update(AurocInput(outputs, torch.tensor([0, 1, 1, 0])), metadata())  # 25 %
    entry = metric.update(AurocInput(outputs, torch.ones(4, dtype=torch.long)), metadata(2))
    assert torch.isnan(entry.value)
    assert float(metric.value()) == pytest.approx(25.0)


def test_only_binary_outputs_are_accepted() -> None:
    with pytest.raises(ValueError, match=r"binary classification only.*\[4, 3\]"):
        AurocMetric().update(AurocInput(torch.zeros(4, 3), torch.zeros(4)), metadata())


def test_a_nan_score_makes_the_value_nan_never_out_of_range() -> None:
    """A NaN logit used to be ranked past every negative: 125 %."""
    metric = AurocMetric()
    outputs = torch.tensor([[0.0, 1.0], [0.0, float("nan")], [1.0, 0.0], [0.5, 0.5]])
    entry = metric.update(AurocInput(outputs, torch.tensor([1, 1, 0, 0])), metadata())
    assert torch.isnan(entry.value) and torch.isnan(metric.value())
    # A NaN score in a single-class batch is left out with the batch.
    metric = AurocMetric()
    metric.update(AurocInput(outputs, torch.tensor([1, 0, 0, 1])), metadata())
    metric.update(AurocInput(outputs, torch.ones(4, dtype=torch.long)), metadata(2))
    assert torch.isnan(metric.value())  # the first batch has the NaN score, and it counts
    metric.clear()
    metric.update(AurocInput(outputs[[0, 2, 3]], torch.tensor([1, 0, 1])), metadata())
    metric.update(AurocInput(outputs, torch.ones(4, dtype=torch.long)), metadata(2))
    assert float(metric.value()) == 100.0  # the NaN score's batch has one class: left out


def test_an_epoch_of_single_class_batches_has_no_value() -> None:
    metric = AurocMetric()
    metric.update(AurocInput(torch.zeros(1, 2), torch.ones(1, dtype=torch.long)), metadata())
    metric.update(AurocInput(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)), metadata(2))
    assert torch.isnan(metric.value())

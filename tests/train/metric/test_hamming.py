"""Hamming score against sklearn, threshold and sigmoid."""

from __future__ import annotations

import pytest
import torch
from sklearn.metrics import hamming_loss

from burnish.train.metric import HammingScore, HammingScoreInput

from tests.train.metric.helpers import MULTILABEL_SCORES, MULTILABEL_TARGETS, metadata


@pytest.mark.parametrize("threshold", [0.3, 0.5, 0.8])
def test_matches_one_minus_sklearn_hamming_loss(threshold: float) -> None:
    metric = HammingScore(threshold=threshold)
    metric.update(HammingScoreInput(MULTILABEL_SCORES, MULTILABEL_TARGETS), metadata())
    predicted = (MULTILABEL_SCORES.numpy() > threshold).astype(int)
    expected = 100 * (1 - hamming_loss(MULTILABEL_TARGETS.numpy(), predicted))
    assert float(metric.value()) == pytest.approx(expected)


def test_sigmoid_applies_to_logits() -> None:
    logits = torch.logit(MULTILABEL_SCORES.clamp(0.01, 0.99))
    with_sigmoid = HammingScore().with_sigmoid(True)
    plain = HammingScore()
    with_sigmoid.update(HammingScoreInput(logits, MULTILABEL_TARGETS), metadata())
    plain.update(HammingScoreInput(MULTILABEL_SCORES, MULTILABEL_TARGETS), metadata())
    assert float(with_sigmoid.value()) == pytest.approx(float(plain.value()))


def test_name_follows_the_threshold() -> None:
    assert HammingScore().name == "Hamming Score @ Threshold(0.5)"
    assert HammingScore().with_threshold(0.7).name == "Hamming Score @ Threshold(0.7)"


def test_shape_mismatch_is_explained() -> None:
    with pytest.raises(ValueError, match=r"\[batch_size, num_labels\].*targets \[5\]"):
        HammingScore().update(HammingScoreInput(MULTILABEL_SCORES, torch.zeros(5)), metadata())

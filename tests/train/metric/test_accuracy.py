"""Accuracy and top-k accuracy on Burn's own fixtures, padding and errors."""

from __future__ import annotations

import pytest
import torch

from burnish.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)

from tests.train.metric.helpers import metadata

# burn-train acc.rs / top_k_acc.rs tests
OUTPUTS = torch.tensor([[0.0, 0.2, 0.8], [1.0, 2.0, 0.5], [0.4, 0.1, 0.2], [0.6, 0.7, 0.2]])
TARGETS = torch.tensor([2, 2, 1, 1])
PADDED_OUTPUTS = torch.tensor(
    [
        [0.0, 0.2, 0.8, 0.0],
        [1.0, 2.0, 0.5, 0.0],
        [0.4, 0.1, 0.2, 0.0],
        [0.6, 0.7, 0.2, 0.0],
        [0.0, 0.1, 0.2, 5.0],  # predicted padding does not count
        [0.0, 0.1, 0.2, 0.0],  # errors on padding do not count
        [0.6, 0.0, 0.2, 0.0],
    ]
)
PADDED_TARGETS = torch.tensor([2, 2, 1, 1, 3, 3, 3])


@pytest.mark.parametrize(
    ("metric", "input_type"),
    [(AccuracyMetric(), AccuracyInput), (TopKAccuracyMetric(2), TopKAccuracyInput)],
)
def test_burn_fixture_without_padding(metric, input_type) -> None:
    metric.update(input_type(OUTPUTS, TARGETS), metadata())
    assert float(metric.value()) == 50.0


@pytest.mark.parametrize(
    ("metric", "input_type"),
    [
        (AccuracyMetric(pad_token=3), AccuracyInput),
        (AccuracyMetric().with_pad_token(3), AccuracyInput),
        (TopKAccuracyMetric(2, pad_token=3), TopKAccuracyInput),
    ],
)
def test_burn_fixture_with_padding(metric, input_type) -> None:
    entry = metric.update(input_type(PADDED_OUTPUTS, PADDED_TARGETS), metadata())
    assert float(metric.value()) == 50.0
    assert entry.count == 7


def test_an_all_padding_batch_does_not_change_the_epoch() -> None:
    metric = AccuracyMetric(pad_token=3)
    metric.update(AccuracyInput(PADDED_OUTPUTS, PADDED_TARGETS), metadata())
    entry = metric.update(AccuracyInput(PADDED_OUTPUTS[4:], PADDED_TARGETS[4:]), metadata(2))
    assert torch.isnan(entry.value)  # the batch has no accuracy...
    assert float(metric.value()) == 50.0  # ...and the epoch is unaffected


def test_top1_equals_accuracy() -> None:
    gen = torch.Generator().manual_seed(0)
    outputs, targets = torch.randn(32, 5, generator=gen), torch.randint(0, 5, (32,), generator=gen)
    top1, accuracy = TopKAccuracyMetric(1), AccuracyMetric()
    top1.update(TopKAccuracyInput(outputs, targets), metadata())
    accuracy.update(AccuracyInput(outputs, targets), metadata())
    assert float(top1.value()) == float(accuracy.value())


def test_names_are_burns_and_unique_per_k() -> None:
    assert AccuracyMetric().name == "Accuracy"
    assert TopKAccuracyMetric(2).name == "Top-K Accuracy @ TopK(2)"
    assert TopKAccuracyMetric(2).name != TopKAccuracyMetric(1).name


def test_invalid_k_and_shapes_are_explained() -> None:
    with pytest.raises(ValueError, match=r"`k` must be >= 1. Received: k=0"):
        TopKAccuracyMetric(0)
    with pytest.raises(ValueError, match="k=4 exceeds the number of classes"):
        TopKAccuracyMetric(4).update(TopKAccuracyInput(OUTPUTS, TARGETS), metadata())
    with pytest.raises(ValueError, match=r"outputs \[batch_size, num_classes\].*\[2, 2, 3\]"):
        AccuracyMetric().update(AccuracyInput(torch.zeros(2, 2, 3), TARGETS[:2]), metadata())


def test_update_does_not_build_a_graph() -> None:
    outputs = OUTPUTS.clone().requires_grad_(True)
    entry = AccuracyMetric().update(AccuracyInput(outputs, TARGETS), metadata())
    assert not entry.value.requires_grad


def test_top_k_breaks_ties_as_argmax_does() -> None:
    """`torch.topk` returns a later class first on ties (CPU); argmax takes the first."""
    outputs = torch.zeros(6, 40)  # every class tied
    outputs[3, 5:] = 1.0
    targets = torch.tensor([0, 1, 2, 5, 39, 0])
    top1, top2, accuracy = TopKAccuracyMetric(1), TopKAccuracyMetric(2), AccuracyMetric()
    top1.update(TopKAccuracyInput(outputs, targets), metadata())
    top2.update(TopKAccuracyInput(outputs, targets), metadata())
    accuracy.update(AccuracyInput(outputs, targets), metadata())
    assert float(top1.value()) == float(accuracy.value()) == pytest.approx(100 * 3 / 6)
    assert float(top2.value()) == pytest.approx(100 * 4 / 6)  # classes 0, 1 (row 3: 5, 6)


def test_nan_scores_rank_first_as_in_argmax() -> None:
    outputs = torch.tensor([[0.0, float("nan"), 1.0], [float("nan")] * 3, [1.0, 2.0, 3.0]])
    targets = torch.tensor([1, 0, 2])
    for k in (1, 2):
        metric = TopKAccuracyMetric(k)
        metric.update(TopKAccuracyInput(outputs, targets), metadata())
        assert float(metric.value()) == 100.0
    hits = outputs.argmax(1) == targets
    assert bool(hits.all())


def test_targets_outside_the_classes_are_misses() -> None:
    metric = TopKAccuracyMetric(2, pad_token=-100)
    outputs = torch.tensor([[1.0, 2.0, 3.0]] * 3)
    metric.update(TopKAccuracyInput(outputs, torch.tensor([2, -100, 7])), metadata())
    assert float(metric.value()) == 50.0  # one hit among two non-pad targets


def test_padded_hits_are_counted_exactly_in_float64() -> None:
    metric = AccuracyMetric(pad_token=0)
    targets = torch.ones(2**24 + 3, dtype=torch.long)  # beyond float32's integers
    targets[:2] = 0
    outputs = torch.zeros(len(targets), 2)
    outputs[:, 1] = 1.0
    metric.update(AccuracyInput(outputs, targets), metadata())
    assert float(metric.state.sum) == 100.0 * (2**24 + 1)  # float32 would round it

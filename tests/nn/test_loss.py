"""Losses: equal to torch.nn.functional where equivalent; Burn's padding semantics pinned."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from burnish.errors import ConfigError
from burnish.nn.loss import (
    BinaryCrossEntropyLossConfig,
    CrossEntropyLoss,
    CrossEntropyLossConfig,
    HuberLossConfig,
    MseLoss,
    Reduction,
)

from tests.helpers import assert_close

gen = torch.Generator().manual_seed(0)
LOGITS = torch.randn(8, 5, generator=gen)
TARGETS = torch.randint(0, 5, (8,), generator=gen)
WEIGHTS = [1.0, 2.0, 0.5, 3.0, 1.5]


@pytest.mark.parametrize("smoothing", [None, 0.1, 1.0])
@pytest.mark.parametrize("weights", [None, WEIGHTS])
def test_cross_entropy_matches_torch(smoothing, weights):
    loss = CrossEntropyLossConfig(smoothing=smoothing, weights=weights).init("cpu")
    expected = F.cross_entropy(
        LOGITS,
        TARGETS,
        weight=None if weights is None else torch.tensor(weights),
        label_smoothing=smoothing or 0.0,
    )
    assert loss(LOGITS, TARGETS).shape == ()
    assert_close(loss.forward(LOGITS, TARGETS), expected)


def test_cross_entropy_probabilities_input():
    loss = CrossEntropyLossConfig(logits=False).init()
    assert_close(loss(LOGITS.softmax(1), TARGETS), F.cross_entropy(LOGITS, TARGETS))


def test_cross_entropy_padding_is_zero_loss_but_counted_as_burn():
    targets = torch.tensor([0, 1, 2, 0])
    logits = torch.randn(4, 3, generator=gen)
    loss = CrossEntropyLoss(0, "cpu")(logits, targets)
    per_item = F.cross_entropy(logits, targets, reduction="none")
    assert_close(loss, per_item[1:3].sum() / 4)  # mean over the whole batch, pads count 0
    weighted = CrossEntropyLossConfig(pad_tokens=[0, 2], weights=[1.0, 2.0, 3.0]).init()
    w = torch.tensor([1.0, 2.0, 3.0])[targets]
    assert_close(weighted(logits, targets), (per_item * w)[1] / w.sum())


def test_cross_entropy_shape_and_config_errors():
    with pytest.raises(ValueError, match=r"Expected logits \[batch, classes\]"):
        CrossEntropyLoss()(LOGITS, TARGETS[:3])
    with pytest.raises(ConfigError, match="smoothing"):
        CrossEntropyLossConfig(smoothing=1.5).init()
    with pytest.raises(ConfigError, match="must all be positive"):
        CrossEntropyLossConfig(weights=[1.0, 0.0]).init()


def test_binary_cross_entropy_matches_torch():
    probs = torch.rand(6, 3, generator=gen)
    targets = torch.randint(0, 2, (6, 3), generator=gen)
    loss = BinaryCrossEntropyLossConfig().init()
    assert_close(loss(probs, targets), F.binary_cross_entropy(probs, targets.float()))
    logits = torch.randn(6, 3, generator=gen)
    weights = [1.0, 2.0, 0.5]
    with_logits = BinaryCrossEntropyLossConfig(weights=weights, logits=True).init()
    expected = F.binary_cross_entropy_with_logits(
        logits, targets.float(), weight=torch.tensor(weights)
    )
    assert_close(with_logits(logits, targets), expected)


def test_binary_cross_entropy_smoothing_as_burn():
    logits = torch.randn(6, 3, generator=gen)
    targets = torch.randint(0, 2, (6, 3), generator=gen)
    loss = BinaryCrossEntropyLossConfig(smoothing=0.3, logits=True).init()
    smoothed = targets.float() * 0.7 + 0.3 / 3  # alpha / num_classes, Burn's formula
    assert_close(loss(logits, targets), F.binary_cross_entropy_with_logits(logits, smoothed))


def test_huber_and_mse_match_torch():
    predictions = torch.randn(10, generator=gen) * 3
    targets = torch.randn(10, generator=gen)
    huber = HuberLossConfig(0.5).init()
    assert_close(huber(predictions, targets), F.huber_loss(predictions, targets, delta=0.5))
    assert_close(
        huber(predictions, targets, Reduction.Sum),
        F.huber_loss(predictions, targets, delta=0.5, reduction="sum"),
    )
    assert_close(MseLoss()(predictions, targets), F.mse_loss(predictions, targets))
    assert_close(
        MseLoss().forward(predictions, targets, Reduction.Sum),
        F.mse_loss(predictions, targets, reduction="sum"),
    )
    with pytest.raises(ConfigError, match="`delta` for the Huber loss must be >= 0"):
        HuberLossConfig(-1.0).init()


def test_loss_configs_round_trip(tmp_path):
    for config in (
        CrossEntropyLossConfig(pad_tokens=[0], smoothing=0.1, weights=WEIGHTS),
        BinaryCrossEntropyLossConfig(weights=[1.0, 2.0], logits=True),
        HuberLossConfig(1.0),
    ):
        assert type(config).load(config.save(tmp_path / "loss.json")) == config

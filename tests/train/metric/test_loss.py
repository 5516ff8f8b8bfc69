"""The loss metric: weighting by batch size, per-item losses, no graph kept."""

from __future__ import annotations

import pytest
import torch

from burnish.train.metric import LossInput, LossMetric

from tests.train.metric.helpers import metadata


def test_epoch_loss_is_the_mean_over_items() -> None:
    metric = LossMetric()
    metric.update(LossInput(torch.tensor(1.0), batch_size=64), metadata(1))
    metric.update(LossInput(torch.tensor(4.0), batch_size=16), metadata(2))  # last, smaller
    assert float(metric.value()) == pytest.approx((64 * 1.0 + 16 * 4.0) / 80)


def test_per_item_losses_count_one_item_each() -> None:
    data = LossInput(torch.tensor([1.0, 2.0, 6.0]))
    entry = LossMetric().update(data, metadata())
    assert entry.count == 3 and float(entry.value) == 3.0


def test_the_entry_keeps_no_autograd_graph() -> None:
    weight = torch.tensor(2.0, requires_grad=True)
    entry = LossMetric().update(LossInput(weight * 3.0, 4), metadata())
    assert not entry.value.requires_grad
    assert LossMetric.higher_is_better is False and LossMetric().name == "Loss"

"""Metrics registered on a Learner: one instance on both splits, and outputs that feed none."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.optim import SgdConfig
from burnish.train import LearnerBuilder, LearnerSummary, RegressionOutput, TrainOutput
from burnish.train.metric import LossMetric
from burnish.train.renderer import NullRenderer


class Regression(torch.nn.Module):
    def __init__(self, bare_valid_loss: bool = False) -> None:
        super().__init__()
        bn.seed(4)
        self.linear = torch.nn.Linear(3, 1)
        self.bare_valid_loss = bare_valid_loss

    def _output(self, batch) -> RegressionOutput:
        inputs, targets = batch
        output = self.linear(inputs)
        return RegressionOutput(torch.nn.functional.mse_loss(output, targets), output, targets)

    def train_step(self, batch) -> TrainOutput:
        item = self._output(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch):
        item = self._output(batch)
        return item.loss if self.bare_valid_loss else item


def _batches(count: int, seed: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(n, 3, generator=gen), torch.randn(n, 1, generator=gen))
        for n in [4] * (count - 1) + [1]
    ]


def _fit(directory, train_metric, valid_metric, model=None) -> LearnerSummary:
    learner = (
        LearnerBuilder(directory)
        .metric_train_numeric(train_metric)
        .metric_valid_numeric(valid_metric)
        .renderer(NullRenderer())
        .num_epochs(2)
        .build(model or Regression(), SgdConfig().init(), 0.05)
    )
    learner.fit(_batches(5, seed=1), _batches(3, seed=2))
    return LearnerSummary.from_dir(directory)


def test_one_instance_on_both_splits_gives_what_two_instances_give(tmp_path) -> None:
    """docs/metrics.md: each split's epoch ends — and clears the metric — before the other
    split updates it, so sharing an instance mixes nothing."""
    shared = LossMetric()
    one = _fit(tmp_path / "one", shared, shared)
    two = _fit(tmp_path / "two", LossMetric(), LossMetric())
    assert one.metrics == two.metrics
    for split in ("train", "valid"):
        for epoch in (1, 2):
            log = f"{split}/epoch-{epoch}/Loss.log"
            assert (tmp_path / "one" / log).read_text() == (tmp_path / "two" / log).read_text()
    [train], [valid] = one.metrics.train, one.metrics.valid
    assert len(train.entries) == len(valid.entries) == 2
    assert train.entries[0].value != valid.entries[0].value  # the splits are not mixed up


def test_an_output_that_feeds_no_metric_names_the_output_classes(tmp_path) -> None:
    """A `valid_step` returning the bare loss with `LossMetric` registered."""
    with pytest.raises(TypeError) as raised:
        _fit(tmp_path, LossMetric(), LossMetric(), Regression(bare_valid_loss=True))
    message = str(raised.value)
    assert "`Tensor` cannot be adapted to `LossInput`" in message
    assert "a bare tensor feeds no metric" in message
    for advice in ("RegressionOutput(loss, output, targets)", "ClassificationOutput", "adapt("):
        assert advice in message
    assert "give `Tensor`" not in message  # not: add a method to torch.Tensor

"""docs/burn.md, Burn main's `Learner` methods (a custom training step over the learner):
the rows that say "same", run as Burn's idiom on MNIST batches."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.lr_scheduler import LinearLrSchedulerConfig
from burnish.optim import AdamConfig, GradientsParams, SgdConfig
from burnish.train import Learner

from tests.docs.burn_rows import row
from tests.train.helpers import Mlp, loaders


def batches(n: int = 3):
    train, _ = loaders(batch_size=16, train_items=16 * n, valid_items=16)
    return list(train.iter())


def learner(optim=None, scheduler=None, seed: int = 0) -> Learner:
    bn.seed(seed)
    return Learner(
        Mlp(),
        optim if optim is not None else SgdConfig().init(),
        scheduler if scheduler is not None else LinearLrSchedulerConfig(0.1, 0.05, 2).init(),
    )


@row("learner.fork(&device), learner.model()")
def test_learner_fork_and_model():
    one = learner()
    model = one.model()
    assert model.training  # the training model, as Burn's `model()`
    one.fork(bn.device("cpu"))
    forked = one.model()
    assert forked is not model and torch.equal(forked.linear1.weight, model.linear1.weight)
    one.lr_step()
    one.optimizer_step(one.train_step(batches(1)[0]).grads)
    assert one.model() is forked  # steps go to the forked model
    assert not torch.equal(forked.linear1.weight, model.linear1.weight)


@row("learner.lr_step(), learner.lr_current()")
def test_learner_lr_step_and_current():
    one = learner()
    assert one.lr_current() == 0.0  # Burn: 0.0 until the first `lr_step`
    rates = []
    for _ in range(4):
        one.lr_step()
        rates.append(float(one.lr_current()))
    assert rates == pytest.approx([0.1, 0.075, 0.05, 0.05])  # the linear schedule's steps


@row("learner.train_step(item), learner.optimizer_step(item.grads)")
def test_learner_train_step_then_optimizer_step_is_sgd_by_hand():
    items = batches(3)
    one = learner()
    bn.seed(0)
    by_hand, optim = Mlp(), SgdConfig().init()
    for batch in items:
        one.lr_step()
        output = one.train_step(batch)
        one.optimizer_step(output.grads)
        item = by_hand.forward_classification(batch)
        grads = GradientsParams.from_grads(bn.backward(item.loss), by_hand)
        by_hand = optim.step(float(one.lr_current()), by_hand, grads)
    for ours, theirs in zip(one.model().parameters(), by_hand.parameters()):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)


@row("learner.load_model(record), load_optim(record), load_scheduler(record)")
def test_learner_load_records_resume_exactly():
    items = batches(4)

    def run(one: Learner, steps) -> None:
        for batch in steps:
            one.lr_step()
            one.optimizer_step(one.train_step(batch).grads)

    straight = learner(AdamConfig().init())
    run(straight, items)
    first = learner(AdamConfig().init())
    run(first, items[:2])
    resumed = learner(AdamConfig().init(), seed=1)  # other weights, no state
    resumed.load_model(first.model().into_record())
    resumed.load_optim(first.optim.to_record())
    resumed.load_scheduler(first.lr_scheduler.to_record())
    run(resumed, items[2:])
    assert float(resumed.lr_current()) == pytest.approx(float(straight.lr_current()))
    for ours, theirs in zip(resumed.model().parameters(), straight.model().parameters()):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)

"""Burn main's form: a plain optimizer from `init()` with a `ModuleLrScheduler` per group.

In Burn main, `SgdConfig::new().init()` is a `ModuleOptimizer`, so
`Learner::new(model, SgdConfig::new().init(), ModuleLrScheduler::new(..).with_group(..))` steps
each group at its own rate. burnish's `init()` gives a plain `Sgd`; it applies a
`ModuleLearningRate` group by group the same way (issue 39, item 5: it raised `TypeError`).
"""

from __future__ import annotations

import torch

import burnish as bn
from burnish.lr_scheduler import ModuleLrScheduler
from burnish.optim import (
    AdamConfig,
    GradientClippingConfig,
    GradientsParams,
    ModuleOptimizer,
    ParamGroup,
    SgdConfig,
)
from burnish.train import Learner, SupervisedTraining
from burnish.train.renderer import NullRenderer

from tests.train.helpers import Mlp, loaders

BASE_LR, HEAD_LR = 1e-2, 1e-3


def _model() -> Mlp:
    bn.seed(7)
    return Mlp()


def _scheduler() -> ModuleLrScheduler:
    return ModuleLrScheduler(BASE_LR).with_group(ParamGroup.from_predicate("linear2"), HEAD_LR)


def _launch(directory, optim):
    train, valid = loaders(batch_size=32, train_items=128, valid_items=32)
    training = SupervisedTraining(directory, train, valid).renderer(NullRenderer()).num_epochs(1)
    return training.launch(Learner(_model(), optim, _scheduler())).model


def test_learner_steps_a_plain_optimizer_with_a_module_lr_scheduler(tmp_path):
    """`Learner(model, SgdConfig().init(), ModuleLrScheduler(1e-2).with_group(...))`, as
    Burn's `Learner::new(..)`, launched on MNIST: the model of an explicit `ModuleOptimizer`,
    with the head moved at its own (smaller) rate."""
    plain = _launch(tmp_path / "plain", SgdConfig().init())
    grouped = _launch(tmp_path / "grouped", ModuleOptimizer(SgdConfig().init()))
    for name, tensor in grouped.state_dict().items():
        assert torch.equal(plain.state_dict()[name], tensor), name

    train, _ = loaders(batch_size=32, train_items=128, valid_items=32)
    reference, sgd = _model(), SgdConfig().init()
    for batch in train.iter():
        loss = reference.forward_classification(batch).loss
        reference = sgd.step(
            BASE_LR, reference, GradientsParams.from_grads(bn.backward(loss), reference)
        )
    start = _model().linear2.weight
    head_delta = float((plain.linear2.weight - start).abs().max())
    base_head_delta = float((reference.linear2.weight - start).abs().max())
    assert 0.0 < head_delta < 0.5 * base_head_delta


def test_a_plain_optimizer_steps_each_group_at_its_rate_as_a_module_optimizer():
    """Custom loop, Burn's idiom: `let lr = scheduler.step(); optim.step(lr, model, grads)`.
    Adam's state stays the plain optimizer's (its record is unchanged in kind)."""
    batches = [
        torch.randn(4, 28 * 28, generator=torch.Generator().manual_seed(i)) for i in range(3)
    ]
    clipping = GradientClippingConfig.norm(0.05)
    models, plain_optim = [], AdamConfig(grad_clipping=clipping).init()
    for optim in (plain_optim, ModuleOptimizer(AdamConfig(grad_clipping=clipping).init())):
        model, scheduler = _model(), _scheduler()
        for x in batches:
            grads = GradientsParams.from_grads(bn.backward(model(x).pow(2).mean()), model)
            model = optim.step(scheduler.step(), model, grads)
        models.append(model)
    plain, grouped = models
    for name, tensor in grouped.state_dict().items():
        assert torch.equal(plain.state_dict()[name], tensor), name
    assert plain_optim.to_record()["optimizer"] == "Adam"
    assert sorted(plain_optim.to_record()["state"]) == sorted(
        name for name, _ in plain.named_parameters()
    )

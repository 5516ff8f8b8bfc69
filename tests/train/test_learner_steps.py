"""Burn main's `Learner` methods, used as Burn's `custom-learning-strategy` example uses them
(examples/custom-learning-strategy/src/training.rs), ported name by name."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.lr_scheduler import (
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    LinearLrSchedulerConfig,
)
from burnish.optim import AdamConfig, GradientsParams, MultiGradientsParams, SgdConfig
from burnish.train import Learner

from tests.train.helpers import Mlp, loaders

SMALL = {"train_items": 192, "valid_items": 64, "batch_size": 32}


def lr_scheduler():
    """The example's scheduler, as it builds it."""
    return (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))  # warmup
        .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000))
    )


def custom_fit(learner, dataloader_train, dataloader_valid, device, num_epochs):
    """`MyCustomLearningStrategy::fit`'s loop, without its event processor and checkpointer."""
    dataloader_train = dataloader_train.to_device(device)
    dataloader_valid = dataloader_valid.to_device(device)
    learner.fork(device)
    lrs, valid_losses = [], []
    for _epoch in range(1, num_epochs + 1):
        iterator = dataloader_train.iter()
        for item in iterator:
            learner.lr_step()
            item = learner.train_step(item)
            learner.optimizer_step(item.grads)
            lrs.append(learner.lr_current())

        model_valid = learner.model().valid()
        for item in dataloader_valid.iter():
            item = model_valid.valid_step(item)  # InferenceStep::step(&model_valid, item)
            valid_losses.append(float(item.loss))
    return learner.model(), lrs, valid_losses


def test_a_custom_loop_over_the_learner_trains_as_the_optimizer_by_hand():
    device = bn.device("cpu")
    bn.seed(0)
    model = Mlp()
    reference = model.fork(device)
    learner = Learner(model, AdamConfig().init(), lr_scheduler().init())
    assert learner.lr_current() == 0.0  # Burn: `lr_module: 0.0` until the first lr_step

    trained, lrs, _ = custom_fit(learner, *loaders(**SMALL), device, num_epochs=2)

    optim, scheduler = AdamConfig().init(), lr_scheduler().init()
    expected_lrs, dataloader_train = [], loaders(**SMALL)[0]
    for _epoch in range(2):
        for batch in dataloader_train.iter():
            lr = scheduler.step()
            expected_lrs.append(lr)
            output = reference.train_step(batch)
            grads = GradientsParams.from_grads(output.grads, reference)
            reference = optim.step(lr, reference, grads)
    assert lrs == pytest.approx(expected_lrs)
    assert trained is learner.model() and trained is not model  # forked to `device`
    for name, tensor in reference.state_dict().items():
        torch.testing.assert_close(trained.state_dict()[name], tensor, atol=1e-6, rtol=1e-5)


def test_the_valid_model_of_the_loop_learns():
    device = bn.device("cpu")
    bn.seed(0)
    learner = Learner(Mlp(), SgdConfig().init(), 0.1)
    _, _, first = custom_fit(learner, *loaders(**SMALL), device, num_epochs=1)
    _, _, later = custom_fit(learner, *loaders(**SMALL), device, num_epochs=2)
    assert sum(later[-2:]) < sum(first)  # the loss of the valid items went down


def test_optimizer_step_multi_sums_the_gradients_of_the_forks():
    # Burn: MultiGradientsParams { grads: vec![(grads_0, device_0), (grads_1, device_1)] }
    bn.seed(0)
    model = Mlp()
    learner = Learner(model.fork("cpu"), SgdConfig().init(), 0.5)
    learner.lr_step()
    batches = list(loaders(**SMALL)[0].iter())[:2]
    forks = [model.fork("cpu"), model.fork("cpu")]
    multi = MultiGradientsParams()
    for fork, batch in zip(forks, batches):
        output = fork.train_step(batch)
        multi.grads.append((GradientsParams.from_grads(output.grads, fork), torch.device("cpu")))

    learner.optimizer_step_multi(multi)

    expected = model.fork("cpu")
    losses = [expected.forward_classification(b).loss for b in batches]
    grads = GradientsParams.from_grads(bn.backward(losses[0] + losses[1]), expected)
    expected = SgdConfig().init().step(0.5, expected, grads)
    for name, tensor in expected.state_dict().items():
        torch.testing.assert_close(learner.model().state_dict()[name], tensor, atol=1e-6, rtol=1e-5)
    assert multi.is_empty()  # consumed, as the optimizer consumes GradientsParams


def test_load_model_optim_and_scheduler_restore_a_learner():
    # learner.load_model(record); learner.load_optim(record); learner.load_scheduler(record)
    bn.seed(0)
    scheduler = LinearLrSchedulerConfig(1e-2, 1e-3, 10)
    first = Learner(Mlp(), AdamConfig().init(), scheduler.init())
    batches = list(loaders(**SMALL)[0].iter())
    for batch in batches[:3]:
        first.lr_step()
        first.optimizer_step(first.train_step(batch).grads)
    model_record = first.model().into_record()
    optim_record, scheduler_record = first.optim.to_record(), first.lr_scheduler.to_record()

    second = Learner(Mlp(), AdamConfig().init(), scheduler.init())
    second.load_model(model_record)
    second.load_optim(optim_record)
    second.load_scheduler(scheduler_record)
    for learner in (first, second):
        learner.lr_step()
        learner.optimizer_step(learner.train_step(batches[3]).grads)

    assert second.lr_current() == pytest.approx(first.lr_current())
    for name, tensor in first.model().state_dict().items():
        torch.testing.assert_close(second.model().state_dict()[name], tensor)


def test_the_steps_refuse_what_burn_would_not_compile():
    learner = Learner(torch.nn.Linear(2, 1), SgdConfig().init(), 0.1)
    with pytest.raises(TypeError, match=r"has none\. Add `def train_step"):
        learner.train_step(torch.ones(1, 2))
    with pytest.raises(TypeError, match=r"takes a MultiGradientsParams.*Received: dict"):
        learner.optimizer_step_multi({})
    with pytest.raises(TypeError, match=r"`\(GradientsParams, device\)` pair\. Received: 3"):
        MultiGradientsParams([3])

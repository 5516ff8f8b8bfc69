"""Burn main's training options on both builders: `with_training_strategy(ExecutionStrategy)`
(single, multi, ddp, custom), `gradient_checkpointing()` through real runs, and the
interrupter's stop message."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train import (
    ExecutionStrategy,
    Learner,
    LearnerBuilder,
    MultiDeviceOptim,
    SupervisedLearningStrategy,
    SupervisedTraining,
    TrainingListener,
    TrainingStrategy,
)
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Blocks(Mlp):
    """The tests' MLP with a stack of residual blocks in an `nn.ModuleList`."""

    def __init__(self) -> None:
        super().__init__(dropout=0.1)
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(32, 32), nn.GELU()) for _ in range(2))
        self.recomputed = 0

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.linear1(images.flatten(1)))
        for block in self.blocks:
            x = x + block(x)
        return self.linear2(self.dropout(x))


def train(tmp_path, name: str, checkpointing: bool, **options) -> nn.Module:
    train_loader, valid_loader = loaders(train_items=192, valid_items=64)
    bn.seed(7)
    b = builder(tmp_path / name, epochs=1).grads_accumulation(2).mixed_precision("bf16")
    if checkpointing:
        b = b.gradient_checkpointing(**options)
    model = Blocks()
    return b.build(model, AdamConfig().init(), 1e-3).fit(train_loader, valid_loader).model


def test_gradient_checkpointing_trains_the_same_model_and_unwraps_after(tmp_path):
    """bf16 autocast and accumulation included: the blocks are recomputed, the steps equal."""
    plain = train(tmp_path, "plain", checkpointing=False)
    recomputed = []
    hook = nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: recomputed.append(1) if isinstance(module, nn.GELU) else None
    )
    try:
        checkpointed = train(tmp_path, "checkpointed", checkpointing=True)
    finally:
        hook.remove()
    # 3 batches x 2 blocks: forward, then again in the backward pass; validation once each.
    assert len(recomputed) == 3 * 2 * 2 + 1 * 2
    assert bn.checkpointed_blocks(checkpointed) == []  # `fit` put the model back as it was
    for (name, a), (_, b) in zip(plain.state_dict().items(), checkpointed.state_dict().items()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)


def test_gradient_checkpointing_checks_its_selector_early_and_blocks_at_fit(tmp_path):
    with pytest.raises(TypeError, match="`blocks` must be None, a module class"):
        LearnerBuilder(tmp_path).gradient_checkpointing(blocks="layers")
    with pytest.raises(ValueError, match=r"found no blocks in Mlp.*blocks=YourBlockClass"):
        train_loader, valid_loader = loaders(train_items=64, valid_items=64)
        learner = (
            builder(tmp_path, epochs=1)
            .gradient_checkpointing()
            .build(Mlp(), AdamConfig().init(), 1e-3)
        )
        learner.fit(train_loader, valid_loader)


def test_single_device_strategy_is_the_old_devices_form(tmp_path):
    old = LearnerBuilder(tmp_path).devices(["cpu"])._options()
    new = LearnerBuilder(tmp_path).with_training_strategy(ExecutionStrategy.single("cpu"))
    assert new._options().parallelism.device == old.parallelism.device == torch.device("cpu")
    burn = TrainingStrategy.Default(ExecutionStrategy.SingleDevice("cpu"))
    assert (
        LearnerBuilder(tmp_path).with_training_strategy(burn)._options().parallelism.device
        == old.parallelism.device
    )
    # The last of `devices` and `with_training_strategy` wins.
    b = LearnerBuilder(tmp_path).with_training_strategy(ExecutionStrategy.ddp(["cpu", "cpu"]))
    assert b.devices(["cpu"])._options().parallelism.kind == "ddp"


def test_several_devices_need_as_many_processes(tmp_path, monkeypatch):
    strategy = ExecutionStrategy.ddp(["cpu", "meta"])
    assert strategy.main_device() == torch.device("cpu")
    b = LearnerBuilder(tmp_path).with_training_strategy(strategy)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    with pytest.raises(ValueError, match=r"names 2 devices.*torchrun --nproc_per_node=2"):
        b._options()
    # As torchrun's second process on this node: the second device, gradients averaged.
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    options = b._options()
    assert (options.parallelism.device, options.parallelism.kind) == (torch.device("meta"), "ddp")
    sharded = ExecutionStrategy.multi(["cpu", "cpu"], MultiDeviceOptim.OPTIM_SHARDED)
    assert (
        LearnerBuilder(tmp_path).with_training_strategy(sharded)._options().parallelism.kind
        == "fsdp"
    )
    one = ExecutionStrategy.multi(["cpu"])  # one device trains alone, as Burn's multi
    assert LearnerBuilder(tmp_path).with_training_strategy(one)._options().parallelism.kind == "ddp"


def test_bad_strategies_say_what_to_pass(tmp_path):
    with pytest.raises(
        TypeError, match=r"ExecutionStrategy \(single, multi, ddp\).*Received: 'cpu'"
    ):
        LearnerBuilder(tmp_path).with_training_strategy("cpu")
    with pytest.raises(ValueError, match=r"non-empty list of devices.*Received: 'cuda'"):
        ExecutionStrategy.ddp("cuda")
    with pytest.raises(ValueError, match="OPTIM_MAIN_DEVICE or OPTIM_SHARDED"):
        ExecutionStrategy.multi(["cpu"], "zero3")
    with pytest.raises(TypeError, match="SupervisedLearningStrategy"):
        TrainingStrategy.custom(lambda learner, train, valid: None)


class CountingStrategy(SupervisedLearningStrategy):
    """A custom strategy: counts, then runs the learner's own loop with its settings."""

    def __init__(self) -> None:
        self.calls = []

    def train(self, learner, dataloader_train, dataloader_valid):
        self.calls.append(learner.options.stopping.num_epochs)
        return learner.fit(dataloader_train, dataloader_valid)


def test_a_custom_strategy_runs_through_launch(tmp_path):
    train_loader, valid_loader = loaders(train_items=64, valid_items=64)
    custom = CountingStrategy()
    result = (
        SupervisedTraining(tmp_path, train_loader, valid_loader)
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .with_training_strategy(TrainingStrategy.Custom(custom))
        .launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    )
    assert custom.calls == [2] and result.epochs_completed == 2
    with pytest.raises(ValueError, match=r"runs through `SupervisedTraining\(...\)\.launch"):
        LearnerBuilder(tmp_path).with_training_strategy(custom).build(
            Mlp(), AdamConfig().init(), 1e-3
        )


class StopWithReason(TrainingListener):
    def on_iteration_end(self, event):
        event.stop("the budget of this test")


def test_the_stop_message_is_burns_get_message_and_is_logged(tmp_path):
    train_loader, valid_loader = loaders(train_items=128, valid_items=64)
    b = builder(tmp_path, epochs=2).with_listener(StopWithReason())
    result = b.build(Mlp(), AdamConfig().init(), 1e-3).fit(train_loader, valid_loader)
    assert result.interrupted
    assert b.interrupter().get_message() == "the budget of this test"
    log = (tmp_path / "experiment.log").read_text()
    assert "Training interrupted: the budget of this test" in log

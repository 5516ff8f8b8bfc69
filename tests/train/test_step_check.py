"""Errors at the learner's boundary: each wrong thing the model, its optimizer or the batcher
hand the learner fails at the first iteration with one message naming what was received and
what to write instead (through real `Learner.fit` runs)."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader as TorchDataLoader

import burnish as bn
from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset, PartialDataset
from burnish.optim import AdamConfig, GradientsParams, SgdConfig
from burnish.train import EvaluatorBuilder, TrainOutput
from burnish.train.metric import AccuracyMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.helpers import MnistBatcher, mnist
from tests.train.helpers import Mlp, builder, loaders


class Counted(Mlp):
    """Counts its train steps, to show the failure comes at the first iteration."""

    def __init__(self) -> None:
        super().__init__()
        self.train_steps = 0

    def train_step(self, batch):
        self.train_steps += 1
        return super().train_step(batch)


def fit(tmp_path, model, optim=None, train=None, valid=None):
    default_train, default_valid = loaders(train_items=128, valid_items=64)
    learner = builder(tmp_path, epochs=2).build(model, optim or AdamConfig().init(), 1e-3)
    return learner.fit(train or default_train, valid or default_valid)


def unchanged(model, before) -> bool:
    return all(torch.equal(p, before[n]) for n, p in model.state_dict().items())


def snapshot(model):
    return {n: p.detach().clone() for n, p in model.state_dict().items()}


class ReturnsItem(Counted):
    def train_step(self, batch):
        self.train_steps += 1
        return self.forward_classification(batch)  # forgot the TrainOutput


class ReturnsLoss(Counted):
    def train_step(self, batch):
        self.train_steps += 1
        return self.forward_classification(batch).loss


class ReturnsNoGrads(Counted):
    def train_step(self, batch):
        self.train_steps += 1
        item = self.forward_classification(batch)
        return TrainOutput(self, item.loss, item)  # the loss where the gradients go


@pytest.mark.parametrize(
    ("model_type", "received"),
    [
        (ReturnsItem, "returned a ClassificationOutput"),
        (ReturnsLoss, r"returned a Tensor of shape \[\]"),
        (ReturnsNoGrads, "returned a TrainOutput whose grads are a Tensor"),
    ],
)
def test_a_train_step_that_returns_no_train_output_fails_at_the_first_iteration(
    tmp_path, model_type, received
):
    bn.seed(0)
    model = model_type()
    before = snapshot(model)
    with pytest.raises(TypeError, match=rf"`{model_type.__name__}.train_step` {received}") as info:
        fit(tmp_path, model)
    assert "return TrainOutput(self, bn.backward(item.loss), item)" in str(info.value)
    assert model.train_steps == 1 and unchanged(model, before)


class ValidReturnsTrainOutput(Mlp):
    def valid_step(self, batch):
        item = self.forward_classification(batch)
        return TrainOutput(self, None, item)


def test_a_valid_step_that_returns_a_train_output_fails_at_its_first_iteration(tmp_path):
    with pytest.raises(TypeError, match=r"`ValidReturnsTrainOutput.valid_step` returned a Train"):
        fit(tmp_path, ValidReturnsTrainOutput())
    assert not (tmp_path / "valid" / "epoch-1" / "Accuracy.log").exists()  # nothing logged


def test_a_test_step_that_returns_a_train_output_fails_in_the_evaluator(tmp_path):
    class TestReturnsTrainOutput(Mlp):
        def test_step(self, batch):
            return TrainOutput(self, None, self.forward_classification(batch))

    evaluator = (
        EvaluatorBuilder(tmp_path)
        .metrics(AccuracyMetric())
        .renderer(CliMetricsRenderer())
        .build(TestReturnsTrainOutput())
    )
    with pytest.raises(TypeError, match=r"`TestReturnsTrainOutput.test_step` returned a Train"):
        evaluator.eval("mnist-test", loaders(valid_items=64)[1])


class NoneBatcher(Batcher):
    def batch(self, items, device):
        MnistBatcher().batch(items, device)  # built, but not returned


def test_a_batcher_that_returns_none_fails_at_the_first_iteration(tmp_path):
    train = (
        DataLoaderBuilder(NoneBatcher()).batch_size(32).build(PartialDataset(mnist("train"), 0, 64))
    )
    model = Counted()
    with pytest.raises(TypeError, match=r"the batcher `NoneBatcher.batch\(items, device\)` ret"):
        fit(tmp_path, model, train=train)
    assert model.train_steps == 0


def test_a_torch_collate_fn_that_returns_none_is_named(tmp_path):
    def collate(items):
        return None

    train = TorchDataLoader(list(range(8)), batch_size=4, collate_fn=collate)
    with pytest.raises(TypeError, match=r"the collate function `.*collate` returned None"):
        fit(tmp_path, Counted(), train=train)


def test_a_valid_batcher_that_returns_none_fails_before_valid_step(tmp_path):
    valid = (
        DataLoaderBuilder(NoneBatcher()).batch_size(32).build(PartialDataset(mnist("test"), 0, 64))
    )
    with pytest.raises(TypeError, match="The valid data loader gave the learner None"):
        fit(tmp_path, Mlp(), valid=valid)


def test_a_model_with_a_parameter_on_another_device_fails_at_the_first_iteration(tmp_path):
    model = Counted()
    model.linear2.to("meta")  # the first parameter, and the batches, stay on the CPU
    with pytest.raises(ValueError, match=r"parameter `linear2.weight` is on device meta, but the"):
        fit(tmp_path, model)
    assert model.train_steps == 0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_model_half_on_the_gpu_fails_at_the_first_iteration(tmp_path):
    model = Counted()
    model.linear2.to("cuda")
    with pytest.raises(ValueError, match=r"parameter `linear2.weight` is on device cuda:0, but"):
        fit(tmp_path, model)
    assert model.train_steps == 0


def test_a_torch_optimizer_fails_at_the_first_iteration(tmp_path):
    model = Counted()
    optim = torch.optim.SGD(Mlp().parameters(), lr=0.1)
    with pytest.raises(TypeError, match=r"torch.optim.SGD.*write `SgdConfig\(\)\.init\(\)`"):
        fit(tmp_path, model, optim=optim)
    assert model.train_steps == 0


def test_an_optimizer_config_fails_at_the_first_iteration_saying_init(tmp_path):
    model = Counted()
    with pytest.raises(
        TypeError, match=r"the config AdamConfig, not an optimizer.*`AdamConfig\(\)\.init\(\)`"
    ):
        fit(tmp_path, model, optim=AdamConfig())
    assert model.train_steps == 0


def _stepped_on(model) -> bn.optim.Optimizer:
    optim = AdamConfig().init()
    batch = next(iter(loaders(train_items=64)[0]))
    output = model.train_step(batch)
    optim.step(1e-3, model, GradientsParams.from_grads(output.grads, model))
    return optim


def test_an_optimizer_that_stepped_another_model_fails_at_the_first_iteration(tmp_path):
    other = Mlp()
    optim = _stepped_on(other)
    model = Counted()
    with pytest.raises(ValueError, match=r"Adam given to the learner was made for another model"):
        fit(tmp_path, model, optim=optim)
    assert model.train_steps == 0
    assert other is not None  # alive: its state is another live model's


def test_an_optimizer_record_of_another_architecture_fails_at_the_first_iteration(tmp_path):
    class Wider(Mlp):
        def __init__(self) -> None:
            super().__init__()
            self.linear1 = torch.nn.Linear(28 * 28, 48)
            self.linear2 = torch.nn.Linear(48, 10)

    record = _stepped_on(Wider()).to_record()
    optim = AdamConfig().init().load_record(record)
    with pytest.raises(ValueError, match=r"'linear1.weight' has shape \[48, 784\], but the model"):
        fit(tmp_path, Counted(), optim=optim)


def test_an_optimizer_reused_on_the_same_model_is_accepted(tmp_path):
    model = Mlp()
    optim = _stepped_on(model)
    result = fit(tmp_path, model, optim=optim)
    assert result.epochs_completed == 2


def test_the_checks_cost_nothing_after_the_first_iteration(tmp_path, monkeypatch):
    from burnish.train.loop import eager_step, evaluation_loop, run

    calls = {"batch": 0, "output": 0, "item": 0}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    check_batch = counting("batch", run.check_first_batch)
    monkeypatch.setattr(run, "check_first_batch", check_batch)  # train
    monkeypatch.setattr(evaluation_loop, "check_first_batch", check_batch)  # valid
    check_output = counting("output", eager_step.check_train_output)
    monkeypatch.setattr(eager_step, "check_train_output", check_output)
    check_item = counting("item", evaluation_loop.check_inference_item)
    monkeypatch.setattr(evaluation_loop, "check_inference_item", check_item)
    fit(tmp_path, Mlp())  # 2 epochs of 2 train and 1 valid iterations
    assert calls == {"batch": 4, "output": 2, "item": 2}


def test_an_in_memory_batch_list_still_trains(tmp_path):
    """A plain list of batches (no batcher) passes the checks."""
    batches = list(loaders(train_items=64)[0])
    loader = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(32)
        .build(InMemDataset([mnist("test").get(i) for i in range(32)]))
    )
    learner = builder(tmp_path, epochs=1).build(Mlp(), SgdConfig().init(), 1e-2)
    assert learner.fit(batches, loader).epochs_completed == 1


class LightningStyle(Mlp):
    """A model written for Lightning: `training_step` and `validation_step`, no burnish steps."""

    train_step = None  # type: ignore[assignment]
    valid_step = None  # type: ignore[assignment]

    def training_step(self, batch):
        return Mlp.train_step(self, batch)

    def validation_step(self, batch):
        return Mlp.valid_step(self, batch)


class ValidationStepOnly(Mlp):
    valid_step = None  # type: ignore[assignment]

    def validation_step(self, batch):
        return Mlp.valid_step(self, batch)


def test_a_missing_step_names_the_lightning_method_the_model_has_instead(tmp_path):
    with pytest.raises(TypeError, match=r"has `training_step`: did you mean `train_step`\?"):
        fit(tmp_path / "train", LightningStyle())
    with pytest.raises(TypeError, match=r"has `validation_step`: did you mean `valid_step`\?"):
        fit(tmp_path / "valid", ValidationStepOnly())


def test_a_missing_valid_step_says_the_validation_loader_can_be_left_out(tmp_path):
    class TrainOnly(Mlp):
        valid_step = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="no `valid_step") as error:
        fit(tmp_path, TrainOnly())
    assert "leave the validation loader out (`learner.fit(train_loader)`)" in str(error.value)
    assert "did you mean" not in str(error.value)  # no Lightning method to point at

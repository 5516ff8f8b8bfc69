"""The range test on the guide model and real MNIST: the same rates, losses and suggestion as a
sweep written by hand; everything put back bit for bit; an early stop at divergence; the
losses read back in batches; clear errors. The learner's `lr_find` writes `lr_finder.json`."""

from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest
import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.optim import AdamConfig, GradientsParams, SgdConfig
from burnish.train import ClassificationOutput, TrainOutput
from burnish.tune import LR_FINDER_FILE, LrFinderResult, lr_find
from burnish.tune.lr_finder import READ_BACK_EVERY

from examples.mnist.model import ModelConfig
from tests.helpers import MnistBatcher, assert_close, mnist

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SWEEP = {"min_lr": 1e-6, "max_lr": 3.0, "num_iterations": 60}  # Adam diverges before 3.0


def guide_model(seed: int = 0):
    """The guide's model (a narrower hidden layer, for time), seeded."""
    bn.seed(seed)
    return ModelConfig(num_classes=10, hidden_size=64).init()


def train_loader(items: int = 4096, batch_size: int = 32):
    dataset = PartialDataset(mnist("train"), 0, items)
    return DataLoaderBuilder(MnistBatcher()).batch_size(batch_size).shuffle(7).build(dataset)


def hand_sweep(model, optim, loader, min_lr, max_lr, num_iterations, threshold=4.0, beta=0.98):
    """The range test as one would write it in a notebook: one `.item()` per step."""
    lrs, losses, smoothed = [], [], []
    average, best = 0.0, math.inf
    batches = iter(loader)
    for k in range(num_iterations):
        lr = min_lr * (max_lr / min_lr) ** (k / (num_iterations - 1))
        output = model.train_step(next(batches))
        loss = output.item.loss.item()
        model = optim.step(lr, model, GradientsParams.from_grads(output.grads, model))
        average = beta * average + (1 - beta) * loss
        lrs.append(lr), losses.append(loss), smoothed.append(average / (1 - beta ** (k + 1)))
        if k > 0 and smoothed[-1] > threshold * best:
            break
        best = min(best, smoothed[-1])
    slopes = np.gradient(np.array(smoothed[10:-1]), np.log(np.array(lrs[10:-1])))
    return lrs, losses, smoothed, lrs[10 + int(np.argmin(slopes))]


def test_the_sweep_equals_one_written_by_hand():
    result = lr_find(guide_model(), AdamConfig().init(), train_loader(), **SWEEP)
    lrs, losses, smoothed, suggestion = hand_sweep(
        guide_model(), AdamConfig().init(), train_loader(), **SWEEP
    )
    assert result.stopped_early and len(result.lrs) == len(lrs) < SWEEP["num_iterations"]
    assert result.lrs == pytest.approx(lrs, rel=1e-12)
    assert_close(result.losses, losses, rtol=1e-6, atol=1e-6)
    assert_close(result.smoothed, smoothed, rtol=1e-6, atol=1e-6)
    assert result.suggestion() == pytest.approx(suggestion, rel=1e-12)
    assert 1e-4 < suggestion < 1e-1  # where Adam trains this model (a sanity bound)


def test_the_model_optimizer_generators_and_loader_are_put_back_bit_for_bit():
    model, optim, loader = guide_model(), AdamConfig().init(), train_loader()
    for batch in loader.slice(0, 96).iter():  # Adam has moments and step counts now
        output = model.train_step(batch)
        model = optim.step(1e-3, model, GradientsParams.from_grads(output.grads, model))
    model.dropout.eval()  # a mode the sweep's model.train() changes
    params = {name: t.detach().clone() for name, t in model.state_dict().items()}
    tensors = [*model.parameters(), *model.buffers()]
    record = optim.to_record()
    generators = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    epoch = loader.epoch

    lr_find(model, optim, loader, **SWEEP)

    after = model.state_dict()
    assert all(torch.equal(after[name], value) for name, value in params.items())
    assert [*model.parameters(), *model.buffers()] == tensors  # the same tensors, refilled
    assert_records_equal(optim.to_record(), record)
    assert (random.getstate(), torch.get_rng_state().tolist()) == (
        generators[0],
        generators[2].tolist(),
    )
    assert np.array_equal(np.random.get_state()[1], generators[1])
    assert loader.epoch == epoch and model.training and not model.dropout.training


def test_a_failing_train_step_still_puts_everything_back():
    class Failing(type(guide_model())):
        calls = 0

        def train_step(self, batch):
            Failing.calls += 1
            if Failing.calls == 15:
                raise RuntimeError("out of memory (on purpose)")
            return super().train_step(batch)

    bn.seed(0)
    model = Failing(ModelConfig(num_classes=10, hidden_size=64))
    optim = SgdConfig().init()
    before = {name: t.detach().clone() for name, t in model.state_dict().items()}
    rng = torch.get_rng_state()
    with pytest.raises(RuntimeError, match="on purpose"):
        lr_find(model, optim, train_loader(), **SWEEP)
    assert all(torch.equal(model.state_dict()[name], t) for name, t in before.items())
    assert torch.equal(torch.get_rng_state(), rng) and optim.to_record()["state"] == {}


def test_it_stops_where_the_smoothed_loss_passes_four_times_its_best():
    result = lr_find(guide_model(), SgdConfig().init(), train_loader(), min_lr=1e-3,
                     max_lr=1e3, num_iterations=80)  # fmt: skip
    assert result.stopped_early
    *before, last = result.smoothed
    assert all(math.isfinite(x) for x in before)
    assert not math.isfinite(last) or last > 4 * min(before)
    assert all(x <= 4 * min(before[: k + 1]) for k, x in enumerate(before))  # not earlier
    no_stop = lr_find(guide_model(), SgdConfig().init(), train_loader(), min_lr=1e-3,
                      max_lr=1e3, num_iterations=80, early_stop_threshold=None)  # fmt: skip
    # Without a threshold only a non-finite loss ends the sweep.
    assert len(no_stop.lrs) == 80 or not math.isfinite(no_stop.losses[-1])
    assert len(no_stop.lrs) > len(result.lrs)


def test_the_losses_come_back_in_one_transfer_per_batch_of_iterations(monkeypatch):
    """SGD has no step counters to read: every host read left is the sweep's (torch's data
    loader draws its workers' seed on the host at each epoch start: not counted)."""
    reads = []
    for name in ("item", "tolist", "cpu", "numpy", "__bool__", "__float__", "__int__"):
        original = getattr(torch.Tensor, name)

        def counted(tensor, *args, _name=name, _original=original, **kwargs):
            if "torch/utils/data" not in sys._getframe(1).f_code.co_filename:
                reads.append(_name)
            return _original(tensor, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counted)
    result = lr_find(guide_model(), SgdConfig().init(), train_loader(), min_lr=1e-5,
                     max_lr=1e-2, num_iterations=25)  # fmt: skip
    monkeypatch.undo()
    assert len(result.lrs) == 25
    chunks = math.ceil(25 / READ_BACK_EVERY)
    assert sorted(reads) == sorted(["cpu", "tolist"] * chunks), reads


def test_a_short_loader_is_iterated_again_and_torch_loaders_work():
    items = [next(iter(train_loader(64))) for _ in range(1)]  # one batch, from a list
    result = lr_find(guide_model(), SgdConfig().init(), items, min_lr=1e-4, max_lr=1e-2,
                     num_iterations=12)  # fmt: skip
    assert len(result.lrs) == 12
    dataset = [(torch.randn(28, 28), k % 10) for k in range(64)]
    torch_loader = torch.utils.data.DataLoader(dataset, batch_size=16, collate_fn=_collate)
    assert len(lr_find(guide_model(), SgdConfig().init(), torch_loader,
                       num_iterations=9).lrs) == 9  # fmt: skip


def _collate(items):
    images, labels = zip(*items)
    return _Batch(torch.stack(images), torch.tensor(labels))


class _Batch:
    def __init__(self, images, targets):
        self.images, self.targets = images, targets


def test_errors_name_what_is_wrong():
    model, optim = guide_model(), SgdConfig().init()
    with pytest.raises(ValueError, match=r"0 < min_lr < max_lr.*max_lr=1e-09"):
        lr_find(model, optim, train_loader(), min_lr=1e-8, max_lr=1e-9)
    with pytest.raises(ValueError, match=r"`early_stop_threshold` must be finite and > 1"):
        lr_find(model, optim, train_loader(), early_stop_threshold=0.5)
    with pytest.raises(ValueError, match=r"yielded no batch\. Pass a data loader"):
        lr_find(model, optim, [])
    with pytest.raises(ValueError, match="when iterated again"):
        lr_find(model, optim, iter([next(iter(train_loader()))]), num_iterations=3)
    with pytest.raises(TypeError, match=r"has none\. Add `def train_step"):
        lr_find(torch.nn.Linear(2, 2), optim, train_loader())
    with pytest.raises(TypeError, match="needs the train data"):
        lr_find(model, optim, None)
    with pytest.raises(TypeError, match=r"Received: Adam\. Use burnish\.optim's config"):
        lr_find(model, torch.optim.Adam(model.parameters()), train_loader())

    class NoLoss(type(model)):
        def train_step(self, batch):
            output = self.forward(batch.images)
            loss = torch.nn.functional.cross_entropy(output, batch.targets, reduction="none")
            return TrainOutput(self, bn.backward(loss.mean()), ClassificationOutput(
                loss, output, batch.targets))  # fmt: skip

    with pytest.raises(TypeError, match=r"Iteration 0 returned TrainOutput whose item's loss is"):
        lr_find(NoLoss(ModelConfig(10, 64)), optim, train_loader())


def test_the_learner_runs_it_and_writes_lr_finder_json_for_the_report(tmp_path):
    from burnish.train import LearnerBuilder
    from burnish.train.metric import LossMetric

    from tests.cli.helpers import burnish

    loader = train_loader(items=640)
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .num_epochs(1)
        .build(guide_model(), AdamConfig().init(), 1e-3, loader)
    )
    result = learner.lr_find(num_iterations=30, min_lr=1e-5, max_lr=1.0)
    saved = LrFinderResult.load(tmp_path / LR_FINDER_FILE)
    assert saved.lrs == result.lrs and saved.losses == result.losses
    assert saved.suggestion() == result.suggestion()

    done = burnish("report", tmp_path)  # before any training: the finder's page alone
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report.html").read_text()
    assert "Learning-rate finder" in page and "no metric logs yet" in page
    if result.suggestion() is not None:
        assert f"suggestion {result.suggestion():.2e}" in page

    learner.fit()  # then the run trains, and its report has both
    done = burnish("report", tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert done.returncode == 0 and "Learning-rate finder" in page and "<h3>Loss</h3>" in page


def assert_records_equal(actual, expected) -> None:
    if isinstance(expected, torch.Tensor):
        assert torch.equal(actual, expected)
    elif isinstance(expected, dict):
        assert actual.keys() == expected.keys()
        for key in expected:
            assert_records_equal(actual[key], expected[key])
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_records_equal(a, e)
    else:
        assert actual == expected

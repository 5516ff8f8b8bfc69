"""`predict(model, loader)`: Lightning's `trainer.predict` (issue 41, item 9): the outputs of
`model.valid()` over every batch, in the loader's order, equal to a hand-written loop."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.train import predict

from tests.helpers import MnistBatcher, assert_close, mnist
from tests.train.helpers import Mlp

ITEMS, BATCH = 100, 32  # the last batch is partial


def items():
    return PartialDataset(mnist("test"), 0, ITEMS)


def model():
    bn.seed(0)
    return Mlp(dropout=0.5).train()  # in training mode: predict must switch dropout off


def logits(model, batch):
    return model(batch.images)


def test_outputs_are_a_hand_loops_in_dataset_order():
    net, data = model(), items()
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).build(data)
    outputs = predict(net, loader, logits)
    assert [len(o) for o in outputs] == [32, 32, 32, 4]
    net.eval()
    with torch.no_grad():
        by_hand = [net(batch.images) for batch in loader.iter()]
    net.train()
    assert all(torch.equal(a, b) for a, b in zip(outputs, by_hand, strict=True))
    targets = torch.cat(predict(net, loader, lambda m, batch: batch.targets))
    assert targets.tolist() == [data.get(i).label for i in range(ITEMS)]


def test_runs_in_eval_mode_without_autograd_and_leaves_the_models_mode():
    net, seen = model(), []

    def step(inference, batch):
        seen.append((inference.training, torch.is_grad_enabled()))
        return inference(batch.images)

    loader = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).build(items())
    first, second = predict(net, loader, step), predict(net, loader, step)
    assert set(seen) == {(False, False)}
    assert all(not o.requires_grad for o in first)
    assert all(torch.equal(a, b) for a, b in zip(first, second))  # dropout off: repeatable
    assert net.training


def test_a_torch_data_loader_gives_the_same_outputs():
    net, data = model(), items()
    stacked = MnistBatcher().batch([data.get(i) for i in range(ITEMS)], torch.device("cpu"))
    torch_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(stacked.images, stacked.targets), batch_size=BATCH
    )
    ours = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).build(data)
    from_torch = predict(net, torch_loader, lambda m, batch: m(batch[0]))
    from_ours = predict(net, ours, logits)
    assert len(from_torch) == len(from_ours) == 4
    assert_close(torch.cat(from_torch), torch.cat(from_ours))


class WithPredictStep(Mlp):
    def predict_step(self, batch):
        return self(batch.images).argmax(dim=1)


class OnBatches(Mlp):
    def forward(self, batch):
        return super().forward(batch.images)


def test_the_default_step_is_predict_step_else_the_forward():
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).build(items())
    bn.seed(0)
    classes = torch.cat(predict(WithPredictStep(), loader))
    assert classes.dtype == torch.int64 and classes.shape == (ITEMS,)
    bn.seed(0)
    on_batches = OnBatches()
    outputs = predict(on_batches, loader)
    assert all(o.shape[1] == 10 for o in outputs)
    bn.seed(0)
    plain = predict(Mlp(), loader, logits)  # the same weights (same seed)
    assert all(torch.equal(a, b) for a, b in zip(outputs, plain))


def test_a_step_that_is_not_callable_is_refused():
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(BATCH).build(items())
    with pytest.raises(TypeError, match=r"`step` must be a callable.*Received: str"):
        predict(model(), loader, "logits")

"""One conformance table every optimizer passes (optax style).

Converges on a quadratic, keeps the parameter dtype, survives a record round-trip
mid-training (same trajectory as an uninterrupted run), lr=0 moves nothing, only the
parameters present in the gradients move, gradients are consumed, and state is lazy.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    GradientClippingConfig,
    GradientsParams,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

from tests.helpers import assert_close, tiny_model

# (config, learning rate that converges on the quadratic within 200 steps)
TABLE = {
    "sgd": (SgdConfig(), 0.1),
    "sgd_momentum": (
        SgdConfig(momentum=MomentumConfig(), weight_decay=WeightDecayConfig(1e-4)),
        0.05,
    ),
    "sgd_nesterov_clip": (
        SgdConfig(
            momentum=MomentumConfig(nesterov=True),
            gradient_clipping=GradientClippingConfig.norm(1.0),
        ),
        0.05,
    ),
    "adam": (AdamConfig(), 0.1),
    "adam_clip_value": (AdamConfig(grad_clipping=GradientClippingConfig.value(0.5)), 0.1),
    "adamw": (AdamWConfig(), 0.1),
    "adamw_clip_global_norm": (
        AdamWConfig(grad_clipping=GradientClippingConfig.global_norm(1.0)),
        0.1,
    ),
    "rmsprop": (RmsPropConfig(), 0.01),
    "rmsprop_centered": (RmsPropConfig(momentum=0.0, centered=True), 0.05),
    "adagrad": (AdaGradConfig(), 0.5),
    "adam_amsgrad": (AdamConfig(amsgrad=True), 0.1),
    "adamw_amsgrad_cautious": (
        AdamWConfig(weight_decay=0.01, amsgrad=True, cautious_weight_decay=True),
        0.1,
    ),
    "adan": (AdanConfig(weight_decay=0.01), 0.1),
    "adan_no_prox_clip": (
        AdanConfig(weight_decay=0.01, no_prox=True, grad_clipping=GradientClippingConfig.norm(1.0)),
        0.1,
    ),
}
NAMES = sorted(TABLE)


class Quadratic(nn.Module):
    def __init__(self, dtype=torch.float32):
        super().__init__()
        self.x = nn.Parameter(torch.tensor([3.0, -2.0, 1.5], dtype=dtype))
        self.target = torch.tensor([1.0, 0.5, -1.0], dtype=dtype)

    def forward(self):
        return ((self.x - self.target) ** 2).sum()


def _train(model, optim, lr, steps):
    for _ in range(steps):
        grads = GradientsParams.from_grads(bn.backward(model()), model)
        model = optim.step(lr, model, grads)
    return model


@pytest.mark.parametrize("name", NAMES)
def test_converges_on_quadratic(name):
    config, lr = TABLE[name]
    model = _train(Quadratic(), config.init(), lr, 300)
    assert model().item() < 1e-2, f"{name} did not converge: loss={model().item()}"


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
@pytest.mark.parametrize("name", NAMES)
def test_keeps_dtype(name, dtype):
    config, lr = TABLE[name]
    optim = config.init()
    model = _train(Quadratic(dtype), optim, lr, 3)
    assert model.x.dtype == dtype
    state = optim.to_record()["state"]["x"]
    assert all(v.dtype == dtype for v in state.values() if isinstance(v, torch.Tensor))


@pytest.mark.parametrize("name", NAMES)
def test_record_round_trip_resumes_exactly(name):
    config, lr = TABLE[name]
    straight = _train(Quadratic(), config.init(), lr, 6)
    first = config.init()
    model = _train(Quadratic(), first, lr, 3)
    record = first.to_record()
    copy = Quadratic()
    copy.x.data.copy_(model.x.data)
    _train(model, first, lr, 1)  # the first optimizer goes on: the record must not change
    resumed = _train(copy, config.init().load_record(record), lr, 3)
    assert_close(resumed.x.detach(), straight.x.detach(), atol=0, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_lr_zero_moves_nothing(name):
    config, _ = TABLE[name]
    model = tiny_model()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    optim = config.init()
    for _ in range(2):
        loss = model(torch.randn(4, 4)).pow(2).mean()
        model = optim.step(0.0, model, GradientsParams.from_grads(bn.backward(loss), model))
    assert_close(dict(model.named_parameters()), before, atol=0, rtol=0)


@pytest.mark.parametrize("name", NAMES)
def test_only_present_params_move_and_grads_are_consumed(name):
    config, lr = TABLE[name]
    model = tiny_model()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    grads = bn.backward(model(torch.randn(4, 4)).pow(2).mean())
    first_layer = GradientsParams.from_module(grads, model[0])
    optim = config.init()
    optim.step(lr, model, first_layer)
    assert len(first_layer) == 0
    assert not torch.equal(model[0].weight, before["0.weight"])
    assert torch.equal(model[2].weight, before["2.weight"])
    assert set(optim.to_record()["state"]) == {"0.weight", "0.bias"}  # lazy state


def test_load_record_of_another_optimizer_fails():
    record = AdamConfig().init().to_record()
    with pytest.raises(RecordError, match=r"saved by optimizer 'Adam'.*cannot be loaded into Sgd"):
        SgdConfig().init().load_record(record)


def test_lr_must_be_a_number():
    model = tiny_model()
    with pytest.raises(TypeError, match="`lr` must be a float"):
        SgdConfig().init().step("0.1", model, GradientsParams())


def test_configs_round_trip_through_json(tmp_path):
    for name, (config, _) in TABLE.items():
        path = config.save(tmp_path / f"{name}.json")
        assert type(config).load(path) == config

"""The Burn book's "Multiple optimizers": one optimizer, disjoint subsets, different lrs.

grads = loss.backward();
let grads_bias = GradientsParams::from_params(&mut grads, &model.linear1, &[bias_id]);
let grads_rest = GradientsParams::from_grads(grads, &model);
model = optim.step(lr * 0.1, model, grads_bias);
model = optim.step(lr, model, grads_rest);
"""

from __future__ import annotations

import torch
from torch import nn

import burnish as bn
from burnish.optim import AdamConfig, GradientsParams, MomentumConfig, SgdConfig

from tests.helpers import assert_close


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        bn.seed(3)
        self.linear1 = nn.Linear(4, 6, dtype=torch.float64)
        self.linear2 = nn.Linear(6, 2, dtype=torch.float64)

    def forward(self, x):
        return self.linear2(torch.tanh(self.linear1(x)))


def _data(step):
    gen = torch.Generator().manual_seed(step)
    return torch.randn(8, 4, generator=gen, dtype=torch.float64)


def _hand_adam(model, lr, steps, eps=1e-5, beta_1=0.9, beta_2=0.999):
    """Adam by hand: the bias of linear1 at lr * 0.1, everything else at lr."""
    params = dict(model.named_parameters())
    m = {k: torch.zeros_like(p) for k, p in params.items()}
    v = {k: torch.zeros_like(p) for k, p in params.items()}
    for t in range(1, steps + 1):
        grads = torch.autograd.grad(model(_data(t)).pow(2).mean(), list(params.values()))
        with torch.no_grad():
            for (name, p), g in zip(params.items(), grads):
                m[name] = beta_1 * m[name] + (1 - beta_1) * g
                v[name] = beta_2 * v[name] + (1 - beta_2) * g * g
                m_hat, v_hat = m[name] / (1 - beta_1**t), v[name] / (1 - beta_2**t)
                rate = lr * 0.1 if name == "linear1.bias" else lr
                p -= rate * m_hat / (v_hat.sqrt() + eps)
    return model


def test_one_optimizer_two_learning_rates_equals_hand_computation():
    lr, steps = 0.01, 3
    model, optim = Net(), AdamConfig().init()
    for t in range(1, steps + 1):
        grads = bn.backward(model(_data(t)).pow(2).mean())
        grads_bias = GradientsParams.from_params(grads, model.linear1, [model.linear1.bias])
        grads_rest = GradientsParams.from_grads(grads, model)
        assert len(grads_bias) == 1 and len(grads_rest) == 3
        model = optim.step(lr * 0.1, model, grads_bias)
        model = optim.step(lr, model, grads_rest)
    expected = _hand_adam(Net(), lr, steps)
    assert_close(dict(model.named_parameters()), dict(expected.named_parameters()), 1e-12, 1e-12)
    assert set(optim.to_record()["state"]) == {
        "linear1.weight",
        "linear1.bias",
        "linear2.weight",
        "linear2.bias",
    }


def test_two_optimizers_on_two_parts_match_torch_param_groups():
    lr_adam, lr_sgd, steps = 0.01, 0.05, 3
    model = Net()
    adam, sgd = AdamConfig().init(), SgdConfig(momentum=MomentumConfig(0.9, 0.0)).init()
    for t in range(1, steps + 1):
        grads = bn.backward(model(_data(t)).pow(2).mean())
        model = adam.step(lr_adam, model, GradientsParams.from_module(grads, model.linear1))
        model = sgd.step(lr_sgd, model, GradientsParams.from_grads(grads, model))

    reference = Net()
    opt_a = torch.optim.Adam(reference.linear1.parameters(), lr=lr_adam, eps=1e-5)
    opt_b = torch.optim.SGD(reference.linear2.parameters(), lr=lr_sgd, momentum=0.9)
    for t in range(1, steps + 1):
        opt_a.zero_grad()
        opt_b.zero_grad()
        reference(_data(t)).pow(2).mean().backward()
        opt_a.step()
        opt_b.step()
    assert_close(dict(model.named_parameters()), dict(reference.named_parameters()), 1e-12, 1e-12)
    assert set(adam.to_record()["state"]) == {"linear1.weight", "linear1.bias"}
    assert set(sgd.to_record()["state"]) == {"linear2.weight", "linear2.bias"}

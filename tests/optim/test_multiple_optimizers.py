"""The Burn book's "Multiple optimizers": one optimizer, disjoint subsets, different lrs.

grads = loss.backward();
let grads_bias = GradientsParams::from_params(&mut grads, &model.linear1, &[bias_id]);
let grads_rest = GradientsParams::from_grads(grads, &model);
model = optim.step(lr * 0.1, model, grads_bias);
model = optim.step(lr, model, grads_rest);
"""

from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.module import fork
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


# -- one optimizer, several modules -----------------------------------------------------------


class Twins(nn.Module):
    """Two parts with the same parameter names and shapes (`weight`, `bias`)."""

    def __init__(self):
        super().__init__()
        bn.seed(4)
        self.first = nn.Linear(3, 3, dtype=torch.float64)
        self.second = nn.Linear(3, 3, dtype=torch.float64)

    def forward(self, x):
        return self.second(torch.tanh(self.first(x)))


def _part_grads(model):
    grads = bn.backward(model(torch.ones(2, 3, dtype=torch.float64)).pow(2).mean())
    return GradientsParams.from_module(grads, model.first), GradientsParams.from_grads(
        grads, model.second
    )


def test_one_stateful_optimizer_refuses_a_second_part_with_the_same_names():
    """Adam stepped on `model.first` then on `model.second` would give both parts one state
    (`weight`, `bias`): refused, naming the fix, before anything moves."""
    model, optim = Twins(), AdamConfig().init()
    first, second = _part_grads(model)
    optim.step(0.1, model.first, first)
    before = model.second.weight.detach().clone()
    with pytest.raises(ValueError, match=r"from_module\(grads, model.part\)"):
        optim.step(0.1, model.second, second)
    assert torch.equal(model.second.weight, before)


def test_the_whole_model_with_each_parts_gradients_steps_both_parts_apart():
    """The same two steps through the whole model: one state per qualified name."""
    model, optim = Twins(), AdamConfig().init()
    for _ in range(2):
        first, second = _part_grads(model)
        optim.step(0.1, model, first)
        optim.step(0.01, model, second)
    state = optim.to_record()["state"]
    assert sorted(state) == ["first.bias", "first.weight", "second.bias", "second.weight"]
    assert {entry["step"] for entry in state.values()} == {2}


def test_stateless_sgd_may_step_each_part_on_its_own():
    """Without momentum there is no state to mix: each part takes its own lr, as by hand."""
    model, optim = Twins(), SgdConfig().init()
    expected = {n: p.detach().clone() for n, p in model.named_parameters()}
    first, second = _part_grads(model)
    for name, grad in [(f"first.{n}", g) for n, g in first.items()] + [
        (f"second.{n}", g) for n, g in second.items()
    ]:
        expected[name] -= (0.1 if name.startswith("first") else 0.01) * grad
    optim.step(0.1, model.first, first)
    optim.step(0.01, model.second, second)
    assert_close(dict(model.named_parameters()), expected, atol=1e-15, rtol=0)


def test_a_fork_goes_on_with_the_state_of_its_original():
    """Burn's fork keeps the parameter ids: the optimizer steps the copy with the same state,
    while the original is still alive."""
    model, optim = Twins(), AdamConfig().init()
    optim.step(0.1, model, _part_grads(model)[0])
    forked = fork(model, "cpu")
    optim.step(0.1, forked, _part_grads(forked)[0])
    assert optim.to_record()["state"]["first.weight"]["step"] == 2


def test_a_new_model_takes_the_state_once_the_old_one_is_gone():
    """A model replaced by a copy (`load_state_dict` into a new instance, say) inherits."""
    model, optim = Twins(), AdamConfig().init()
    optim.step(0.1, model, _part_grads(model)[0])
    model = Twins()  # the first instance is freed here
    optim.step(0.1, model, _part_grads(model)[0])
    assert optim.to_record()["state"]["first.weight"]["step"] == 2


def test_a_loaded_record_belongs_to_the_next_module_stepped():
    old, optim = Twins(), AdamConfig().init()
    optim.step(0.1, old, _part_grads(old)[0])
    record = optim.to_record()
    new = Twins()  # `old` is still alive
    optim.load_record(record)
    optim.step(0.1, new, _part_grads(new)[0])
    assert optim.to_record()["state"]["first.weight"]["step"] == 2


def test_an_optimizer_that_stepped_pickles_and_goes_on():
    """The modules it stepped are weak references, left out of a pickle (or a copy)."""
    model, optim = Twins(), AdamConfig().init()
    optim.step(0.1, model, _part_grads(model)[0])
    restored = pickle.loads(pickle.dumps(optim))
    assert restored.to_record()["state"].keys() == optim.to_record()["state"].keys()
    restored.step(0.1, model, _part_grads(model)[0])
    assert restored.to_record()["state"]["first.weight"]["step"] == 2

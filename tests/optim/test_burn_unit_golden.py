"""Burn's own optimizer unit tests, rebuilt with burnish: the numbers in
tests/golden/burn_unit_tests.py (Muon, Adan, L-BFGS, AMSGrad, cautious weight decay)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import (
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    GradientsParams,
    WeightDecayConfig,
)

from tests.golden import burn_unit_tests as burn
from tests.helpers import assert_close

F32, F64 = torch.float32, torch.float64


class BurnLinear(nn.Module):
    """Burn's `Linear`: weight `[d_input, d_output]`, `x @ W + b`."""

    def __init__(self, weight, bias, dtype=F32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.tensor(weight, dtype=dtype))
        self.bias = None if bias is None else nn.Parameter(torch.tensor(bias, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x @ self.weight
        return out if self.bias is None else out + self.bias


def _step(optim, linear, x, lr=burn.LEARNING_RATE):
    """Burn's `linear.forward(x).backward()`: the gradient of the output's sum."""
    loss = linear(torch.tensor(x, dtype=F32)).sum()
    return optim.step(lr, linear, GradientsParams.from_grads(bn.backward(loss), linear))


def _fifty_steps(optim):
    linear = BurnLinear(burn.WEIGHT, burn.BIAS)
    for i in range(1, 51):
        linear = _step(optim, linear, (torch.ones(2, 6) * (i * 0.1)).tolist())
    return linear


def _assert_layer(linear, expected, atol):
    assert_close(linear.weight.detach(), torch.tensor(expected["weight"]), atol=atol, rtol=0)
    assert_close(linear.bias.detach(), torch.tensor(expected["bias"]), atol=atol, rtol=0)


def test_adam_amsgrad_50_steps():
    config = AdamConfig(epsilon=1e-8, weight_decay=WeightDecayConfig(0.5), amsgrad=True)
    _assert_layer(_fifty_steps(config.init()), burn.ADAM_AMSGRAD_50, atol=1e-5)


def test_adamw_amsgrad_50_steps():
    config = AdamWConfig(epsilon=1e-8, weight_decay=0.5, amsgrad=True)
    _assert_layer(_fifty_steps(config.init()), burn.ADAMW_AMSGRAD_50, atol=1e-5)


@pytest.mark.parametrize(("cautious", "x_2"), [(True, burn.X_2_CAUTIOUS), (False, burn.X_2)])
def test_adamw_cautious_weight_decay_within_burns_tolerance(cautious, x_2):
    """Burn's numbers hold to its own 1e-2 only (most are the plain test's, copied)."""
    config = AdamWConfig(epsilon=1e-8, weight_decay=0.5, cautious_weight_decay=cautious)
    optim = config.init()
    linear = _step(optim, BurnLinear(burn.WEIGHT, burn.BIAS), burn.X_1)
    linear = _step(optim, linear, x_2)
    expected = [row[:] for row in burn.ADAMW_CAUTIOUS["weight"]]
    if not cautious:
        expected[5][5] = burn.ADAMW_PLAIN_LAST
    _assert_layer(linear, {"weight": expected, "bias": burn.ADAMW_CAUTIOUS["bias"]}, atol=1e-2)


def _cautious_adamw_formula(weight, bias, inputs, lr, wd, cautious):
    """Burn's `AdamW::step` with `cautious_weight_decay`, transcribed in float64 torch."""
    params = [torch.tensor(weight, dtype=F64), torch.tensor(bias, dtype=F64)]
    m, v = [0, 0], [0, 0]
    for t, x in enumerate(inputs, start=1):
        x = torch.tensor(x, dtype=F64)
        ones = torch.ones(x.shape[0], params[1].numel(), dtype=F64)
        grads = [x.T @ ones, ones.sum(0)]
        for i, (p, g) in enumerate(zip(params, grads)):
            m[i] = m[i] * 0.9 + g * 0.1
            v[i] = v[i] * 0.999 + g * g * 0.001
            update = (m[i] / (1 - 0.9**t)) / ((v[i] / (1 - 0.999**t)).sqrt() + 1e-8)
            decay = p * lr * wd
            if cautious:
                decay = decay.masked_fill((p >= 0) != (m[i] >= 0), 0.0)
            params[i] = p - decay - update * lr
    return params


@pytest.mark.parametrize("cautious", [True, False])
def test_adamw_cautious_weight_decay_equals_burns_formula(cautious):
    """Tight: float64 burnish against a transcription of Burn's `AdamW::step`."""
    gen = torch.Generator().manual_seed(3)
    inputs = [(torch.randn(2, 6, generator=gen)).tolist() for _ in range(6)]
    config = AdamWConfig(epsilon=1e-8, weight_decay=0.5, cautious_weight_decay=cautious)
    optim, linear = config.init(), BurnLinear(burn.WEIGHT, burn.BIAS, F64)
    for x in inputs:
        loss = linear(torch.tensor(x, dtype=F64)).sum()
        grads = GradientsParams.from_grads(bn.backward(loss), linear)
        linear = optim.step(burn.LEARNING_RATE, linear, grads)
    expected = _cautious_adamw_formula(burn.WEIGHT, burn.BIAS, inputs, 0.01, 0.5, cautious)
    assert_close([linear.weight.detach(), linear.bias.detach()], expected, atol=1e-12, rtol=0)
    plain = _cautious_adamw_formula(burn.WEIGHT, burn.BIAS, inputs, 0.01, 0.5, not cautious)
    assert (plain[0] - expected[0]).abs().max() > 1e-4  # the mask was active


def test_adan_with_numbers():
    config = AdanConfig(beta_1=0.98, beta_2=0.92, beta_3=0.99, epsilon=1e-8, weight_decay=0.02)
    optim = config.init()
    linear = _step(optim, BurnLinear(burn.WEIGHT, burn.BIAS), burn.X_1)
    linear = _step(optim, linear, burn.X_2)
    _assert_layer(linear, burn.ADAN, atol=1e-5)


def test_adan_no_nan_on_a_repeated_input():
    """adan.rs `test_adan_optimizer_no_nan`: the same input twice (a zero gradient difference)."""
    optim = AdanConfig(epsilon=1e-8, weight_decay=0.02).init()
    linear = _step(optim, BurnLinear(burn.WEIGHT, burn.BIAS), burn.X_2)
    linear = _step(optim, linear, burn.X_2)
    assert torch.isfinite(linear.weight).all()

"""Burn main's newer optimizers against `torch.optim`, where torch has the same algorithm.

Each case trains two copies of a small MLP on real MNIST batches for 50 steps, one with
burnish (`bn.backward` -> `GradientsParams` -> `optim.step`, or L-BFGS's closure) and one
with torch's optimizer given the same values, and compares every parameter within 1e-6.

Muon runs in float64: `torch.optim.Muon` keeps its momentum as an average (`(1 - mu)` times
Burn's sum, which the normalisation cancels) and casts the Newton-Schulz iteration to
bfloat16, where Burn iterates in the parameter's dtype. The test gives torch's iteration the
parameter's dtype (`Tensor.bfloat16` is the identity while torch steps) and float64 keeps
the two momentum forms equal far below 1e-6 (float32 rounding, amplified by the iteration,
reaches ~4e-6 in 50 steps).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import (
    AdamConfig,
    AdamWConfig,
    AdjustLrFn,
    GradientsParams,
    LBFGSConfig,
    LineSearchFn,
    MuonConfig,
    WeightDecayConfig,
)

from tests.helpers import assert_close, mnist

pytestmark = pytest.mark.usefixtures("one_torch_thread")
STEPS = 50
F64 = torch.float64


@functools.cache
def _mnist_batches(count: int, size: int, dtype=torch.float32):
    dataset = mnist("train")
    items = [dataset.get(i) for i in range(count * size)]
    images = torch.from_numpy(np.stack([item.image for item in items]) / 255).to(dtype)
    labels = torch.tensor([item.label for item in items])
    return list(zip(images.flatten(1).split(size), labels.split(size)))


def _mlp(bias: bool = True, dtype=torch.float32, hidden: int = 32) -> nn.Module:
    bn.seed(7)
    return nn.Sequential(
        nn.Linear(784, hidden, bias=bias), nn.Tanh(), nn.Linear(hidden, 10, bias=bias)
    ).to(dtype)


def _loss(model: nn.Module, batch) -> torch.Tensor:
    images, labels = batch
    return nn.functional.cross_entropy(model(images), labels)


def _lrs():
    return [0.02 * (1 + (i % 5)) / 3 for i in range(STEPS)]  # a varying learning rate


def _train_both(ours, optim, theirs, reference, batches, torch_step=None):
    for lr, batch in zip(_lrs(), batches):
        grads = GradientsParams.from_grads(bn.backward(_loss(ours, batch)), ours)
        ours = optim.step(lr, ours, grads)
        for group in reference.param_groups:
            group["lr"] = lr
        reference.zero_grad()
        _loss(theirs, batch).backward()
        (torch_step or reference.step)()
    return ours


AMSGRAD_CASES = {
    "adam-amsgrad": (
        AdamConfig(epsilon=1e-8, amsgrad=True),
        lambda p: torch.optim.Adam(p, eps=1e-8, amsgrad=True),
    ),
    "adam-amsgrad-l2": (
        AdamConfig(weight_decay=WeightDecayConfig(0.01), amsgrad=True),
        lambda p: torch.optim.Adam(p, eps=1e-5, weight_decay=0.01, amsgrad=True),
    ),
    "adamw-amsgrad": (
        AdamWConfig(weight_decay=0.05, amsgrad=True),
        lambda p: torch.optim.AdamW(p, eps=1e-5, weight_decay=0.05, amsgrad=True),
    ),
}


@pytest.mark.parametrize("name", sorted(AMSGRAD_CASES))
def test_amsgrad_matches_torch_over_50_steps(name):
    config, make_reference = AMSGRAD_CASES[name]
    ours, theirs = _mlp(), _mlp()
    reference = make_reference(theirs.parameters())
    ours = _train_both(ours, config.init(), theirs, reference, _mnist_batches(STEPS, 16))
    assert_close(dict(ours.named_parameters()), dict(theirs.named_parameters()))
    # The option matters on this run: plain Adam(W) lands elsewhere.
    plain = _mlp()
    plain_config = config.with_amsgrad(False)
    _train_both(plain, plain_config.init(), _mlp(), make_reference(_mlp().parameters()),
                _mnist_batches(STEPS, 16))  # fmt: skip
    assert (plain[0].weight - theirs[0].weight).abs().max() > 1e-4


@pytest.mark.parametrize("adjust", list(AdjustLrFn), ids=lambda a: a.name)
def test_muon_matches_torch_over_50_steps(adjust, monkeypatch):
    ours, theirs = _mlp(bias=False, dtype=F64), _mlp(bias=False, dtype=F64)
    config = MuonConfig(weight_decay=WeightDecayConfig(0.1), adjust_lr_fn=adjust)
    reference = torch.optim.Muon(
        theirs.parameters(), weight_decay=0.1, momentum=0.95, nesterov=True,
        adjust_lr_fn=adjust.value,
    )  # fmt: skip

    torch_adjust_lr = torch.optim._muon._adjust_lr

    def burns_ratio(lr, adjust_lr_fn, param_shape):
        """Burn's ratio is written for its `[d_input, d_output]` weights; torch reads its own
        `[d_output, d_input]` (`nn.Linear(8, 4)`: Burn sqrt(2), torch 1): swap to compare."""
        return torch_adjust_lr(lr, adjust_lr_fn, torch.Size([param_shape[1], param_shape[0]]))

    def step_in_the_parameter_dtype() -> None:
        with monkeypatch.context() as patch:
            patch.setattr(torch.Tensor, "bfloat16", torch.Tensor.clone)
            patch.setattr(torch.optim._muon, "_adjust_lr", burns_ratio)
            reference.step()

    batches = _mnist_batches(STEPS, 16, F64)
    ours = _train_both(ours, config.init(), theirs, reference, batches,
                       step_in_the_parameter_dtype)  # fmt: skip
    assert_close(dict(ours.named_parameters()), dict(theirs.named_parameters()))
    moved = (ours[0].weight - _mlp(bias=False, dtype=F64)[0].weight).abs().max()
    assert moved > 1e-2


@pytest.mark.parametrize(
    ("line_search", "lr"), [(None, 0.2), (LineSearchFn.StrongWolfe, 1.0)], ids=["fixed", "wolfe"]
)
def test_lbfgs_matches_torch_over_50_steps(line_search, lr):
    """Full batch, as L-BFGS is used (on changing mini-batches a fixed step is chaotic: any
    rounding difference grows by orders of magnitude within a few steps)."""
    ours, theirs = _mlp(dtype=F64, hidden=8), _mlp(dtype=F64, hidden=8)
    optim = LBFGSConfig(max_iter=4, history_size=10, line_search_fn=line_search).init()
    reference = torch.optim.LBFGS(
        theirs.parameters(), lr=lr, max_iter=4, history_size=10,
        line_search_fn=line_search and "strong_wolfe",
    )  # fmt: skip
    (batch,) = _mnist_batches(1, 1024, F64)

    def closure() -> torch.Tensor:
        reference.zero_grad()
        loss = _loss(theirs, batch)
        loss.backward()
        return loss

    losses = []
    for _ in range(STEPS):
        ours, loss = optim.step(lr, ours, lambda model: _loss(model, batch))
        losses.append(loss)
        reference.step(closure)
    assert_close(dict(ours.named_parameters()), dict(theirs.named_parameters()))
    assert losses[-1] < losses[0] / 4  # it trains
    iterations = optim.to_record()["state"]["g_iter"]
    assert iterations == reference.state[reference._params[0]]["n_iter"] > 4 * STEPS // 2

"""Burn's optimizer formulas, pinned by golden numbers from tests/golden/make_optim_golden.py.

The script transcribes Burn's Rust formulas in float64 NumPy (no torch); these tests feed the
same gradients to burnish's optimizers (float64 parameters) and compare after three steps
with three different learning rates. This pins where Burn differs from `torch.optim`
(Nesterov with dampening, default epsilon/dampening/momentum, per-tensor clipping).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

from tests.helpers import assert_close

GOLDEN = json.loads((Path(__file__).parents[1] / "golden" / "optim_golden.json").read_text())

CONFIGS = {
    "sgd_plain": SgdConfig(),
    "sgd_momentum_burn_defaults": SgdConfig(momentum=MomentumConfig()),
    "sgd_nesterov_dampening_decay": SgdConfig(
        momentum=MomentumConfig(0.9, 0.5, nesterov=True), weight_decay=WeightDecayConfig(0.01)
    ),
    "sgd_clip_norm": SgdConfig(
        momentum=MomentumConfig(), gradient_clipping=GradientClippingConfig.norm(0.5)
    ),
    "sgd_clip_value": SgdConfig(gradient_clipping=GradientClippingConfig.value(0.3)),
    "adam_burn_defaults": AdamConfig(),
    "adam_l2": AdamConfig(beta_1=0.8, beta_2=0.99, weight_decay=WeightDecayConfig(0.1)),
    "adamw_burn_defaults": AdamWConfig(),
    "adamw_decay_clip": AdamWConfig(
        weight_decay=0.1, grad_clipping=GradientClippingConfig.norm(0.5)
    ),
    "rmsprop_burn_defaults": RmsPropConfig(),
    "rmsprop_centered_no_momentum": RmsPropConfig(
        alpha=0.9, momentum=0.0, centered=True, weight_decay=WeightDecayConfig(0.01)
    ),
    "adagrad_burn_defaults": AdaGradConfig(),
    "adagrad_lr_decay": AdaGradConfig(lr_decay=0.1, weight_decay=WeightDecayConfig(0.01)),
}


def test_every_golden_case_has_a_config():
    assert set(CONFIGS) == set(GOLDEN["expected"])


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_burn_formula(name):
    module = nn.Module()
    module.weight = nn.Parameter(torch.tensor(GOLDEN["param"], dtype=torch.float64))
    optim = CONFIGS[name].init()
    for lr, grad in zip(GOLDEN["lrs"], GOLDEN["grads"]):
        grads = GradientsParams()
        grads.register(module.weight, torch.tensor(grad, dtype=torch.float64), name="weight")
        module = optim.step(lr, module, grads)
    expected = torch.tensor(GOLDEN["expected"][name], dtype=torch.float64)
    assert_close(module.weight.detach(), expected, atol=1e-9, rtol=1e-9)


def test_burn_defaults_differ_from_torch():
    """The point of the golden file: Burn's defaults are not PyTorch's."""
    assert (
        AdamConfig().epsilon
        == 1e-5
        != torch.optim.Adam([nn.Parameter(torch.ones(1))]).defaults["eps"]
    )
    assert MomentumConfig().dampening == 0.1
    assert AdamWConfig().weight_decay == 1e-4
    assert RmsPropConfig().momentum == 0.9

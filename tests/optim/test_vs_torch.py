"""Differential tests: where Burn's semantics equal PyTorch's, results match `torch.optim`.

Each case trains two identical models for a few steps on the same data with a varying
learning rate, one with burnish (bn.backward -> GradientsParams -> optim.step) and one with
the equivalent `torch.optim` optimizer (given Burn's values explicitly), and compares every
parameter within 1e-6.
"""

from __future__ import annotations

import itertools

import pytest
import torch

import burnish as bn
from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientsParams,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

from tests.helpers import assert_close, tiny_model

LRS = [0.05, 0.02, 0.01, 0.03]


def _decay(penalty):
    return None if penalty == 0 else WeightDecayConfig(penalty)


def _sgd_cases():
    for momentum, dampening, decay in itertools.product([0.0, 0.9], [0.0, 0.3], [0.0, 0.01]):
        cfg = SgdConfig(
            weight_decay=_decay(decay),
            momentum=MomentumConfig(momentum, dampening) if momentum else None,
        )
        kwargs = dict(momentum=momentum, dampening=dampening if momentum else 0.0)
        yield (
            f"sgd-m{momentum}-d{dampening}-wd{decay}",
            cfg,
            torch.optim.SGD,
            kwargs | {"weight_decay": decay},
        )
    cfg = SgdConfig(momentum=MomentumConfig(0.8, 0.0, nesterov=True))
    yield "sgd-nesterov", cfg, torch.optim.SGD, dict(momentum=0.8, nesterov=True)


def _adam_cases():
    for betas, eps, decay in itertools.product([(0.9, 0.999), (0.8, 0.9)], [1e-5, 1e-8], [0, 0.1]):
        cfg = AdamConfig(betas[0], betas[1], eps, weight_decay=_decay(decay))
        kwargs = dict(betas=betas, eps=eps, weight_decay=decay)
        yield f"adam-{betas}-{eps}-{decay}", cfg, torch.optim.Adam, kwargs
        cfg = AdamWConfig(betas[0], betas[1], eps, weight_decay=decay or 1e-4)
        kwargs = dict(betas=betas, eps=eps, weight_decay=decay or 1e-4)
        yield f"adamw-{betas}-{eps}-{decay}", cfg, torch.optim.AdamW, kwargs


def _other_cases():
    for momentum, centered, decay in itertools.product([0.0, 0.9], [False, True], [0, 0.01]):
        cfg = RmsPropConfig(0.95, momentum, 1e-5, centered, weight_decay=_decay(decay))
        kwargs = dict(alpha=0.95, momentum=momentum, eps=1e-5, centered=centered)
        yield (
            f"rmsprop-{momentum}-{centered}-{decay}",
            cfg,
            torch.optim.RMSprop,
            kwargs | {"weight_decay": decay},
        )
    for lr_decay, decay in itertools.product([0.0, 0.1], [0, 0.01]):
        cfg = AdaGradConfig(lr_decay, 1e-5, weight_decay=_decay(decay))
        kwargs = dict(lr_decay=lr_decay, eps=1e-5, weight_decay=decay)
        yield f"adagrad-{lr_decay}-{decay}", cfg, torch.optim.Adagrad, kwargs


CASES = [*_sgd_cases(), *_adam_cases(), *_other_cases()]


@pytest.mark.parametrize(
    ("name", "config", "torch_cls", "kwargs"), CASES, ids=[c[0] for c in CASES]
)
def test_matches_torch_optim(name, config, torch_cls, kwargs):
    ours, theirs = tiny_model(seed=1), tiny_model(seed=1)
    reference = torch_cls(theirs.parameters(), lr=LRS[0], **kwargs)
    optim = config.init()
    gen = torch.Generator().manual_seed(0)
    for lr in LRS:
        x, y = torch.randn(8, 4, generator=gen), torch.randn(8, 3, generator=gen)
        loss = torch.nn.functional.mse_loss(ours(x), y)
        ours = optim.step(lr, ours, GradientsParams.from_grads(bn.backward(loss), ours))
        for group in reference.param_groups:
            group["lr"] = lr
        reference.zero_grad()
        torch.nn.functional.mse_loss(theirs(x), y).backward()
        reference.step()
    assert_close(dict(ours.named_parameters()), dict(theirs.named_parameters()))

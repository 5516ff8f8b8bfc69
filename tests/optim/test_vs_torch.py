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
    GradientClippingConfig,
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


# -- global-norm clipping: torch.nn.utils.clip_grad_norm_ followed by the same optimizer ------

GLOBAL_NORM_CASES = {
    "sgd-momentum": (
        lambda clip: SgdConfig(momentum=MomentumConfig(0.9, 0.0), gradient_clipping=clip),
        lambda params: torch.optim.SGD(params, lr=LRS[0], momentum=0.9),
    ),
    "adam": (
        lambda clip: AdamConfig(grad_clipping=clip),
        lambda params: torch.optim.Adam(params, lr=LRS[0], eps=1e-5),
    ),
    "adamw": (
        lambda clip: AdamWConfig(weight_decay=0.01, grad_clipping=clip),
        lambda params: torch.optim.AdamW(params, lr=LRS[0], eps=1e-5, weight_decay=0.01),
    ),
}


@pytest.mark.parametrize("max_norm", [0.05, 1e3], ids=["clipping", "below-the-norm"])
@pytest.mark.parametrize("name", sorted(GLOBAL_NORM_CASES))
def test_global_norm_clipping_matches_clip_grad_norm(name, max_norm):
    """`GradientClippingConfig.global_norm(x)` = `clip_grad_norm_(params, x)` + the step."""
    make_config, make_reference = GLOBAL_NORM_CASES[name]
    ours, theirs = tiny_model(seed=2), tiny_model(seed=2)
    optim = make_config(GradientClippingConfig.global_norm(max_norm)).init()
    reference = make_reference(theirs.parameters())
    per_tensor = make_config(GradientClippingConfig.norm(max_norm)).init()
    per_tensor_model = tiny_model(seed=2)
    gen = torch.Generator().manual_seed(0)
    for lr in LRS:
        x, y = torch.randn(8, 4, generator=gen), 10 * torch.randn(8, 3, generator=gen)
        for model, opt in ((ours, optim), (per_tensor_model, per_tensor)):
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.step(lr, model, GradientsParams.from_grads(bn.backward(loss), model))
        for group in reference.param_groups:
            group["lr"] = lr
        reference.zero_grad()
        torch.nn.functional.mse_loss(theirs(x), y).backward()
        total = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm)
        reference.step()
    assert_close(dict(ours.named_parameters()), dict(theirs.named_parameters()))
    if max_norm < total:  # clipping was active: per tensor is another rule
        differs = any(
            not torch.allclose(a, b, atol=1e-6)
            for a, b in zip(per_tensor_model.parameters(), theirs.parameters())
        )
        assert differs


def test_global_norm_clipping_scales_every_gradient_by_one_factor():
    grads = [torch.tensor([3.0, 0.0]), torch.tensor([[4.0]], dtype=torch.float64)]
    clipped = GradientClippingConfig.global_norm(1.0).clip(grads)
    factor = 1.0 / (5.0 + 1e-6)
    assert_close(clipped[0], torch.tensor([3.0 * factor, 0.0]))
    assert_close(clipped[1], torch.tensor([[4.0 * factor]], dtype=torch.float64))
    assert clipped[1].dtype == torch.float64
    assert torch.equal(grads[0], torch.tensor([3.0, 0.0]))  # copies: the inputs are untouched
    unclipped = GradientClippingConfig.global_norm(10.0).clip(grads)
    assert_close(list(unclipped), grads)


def test_global_norm_clipping_config_round_trips(tmp_path):
    clip = GradientClippingConfig.global_norm(0.5)
    assert clip == GradientClippingConfig("global_norm", 0.5)
    assert GradientClippingConfig.load(clip.save(tmp_path / "clip.json")) == clip
    config = AdamWConfig(grad_clipping=clip)
    loaded = AdamWConfig.load(config.save(tmp_path / "adamw.json"))
    assert loaded == config and loaded.grad_clipping.mode == "global_norm"
    with pytest.raises(bn.ConfigError, match=r"'global_norm'.*Received: mode='global'"):
        GradientClippingConfig("global", 0.5)

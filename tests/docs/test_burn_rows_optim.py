"""docs/burn.md, Autodiff and optimizers, Learning-rate schedulers: the rows that say "same",
each run as Burn's idiom and checked against Burn's formulas (burn-optim)."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.lr_scheduler import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    MomentumConfig,
    ParamGroup,
    RmsPropConfig,
    SgdConfig,
    WeightDecayConfig,
)

from tests.docs.burn_rows import row


class Model(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 2, kernel_size=3)
        self.linear1 = nn.Linear(8, 3)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.linear1(torch.relu(self.conv1(images)).flatten(1))


def model_and_loss(seed: int = 0) -> tuple[Model, torch.Tensor]:
    bn.seed(seed)
    model = Model()
    return model, model(torch.randn(4, 1, 4, 4)).square().mean()


def linear_and_grad(g: float = 0.5):
    """A linear layer whose weight's gradient is `g` everywhere (loss = g * sum(w))."""
    linear = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        linear.weight.fill_(1.0)
    grads = GradientsParams.from_grads(bn.backward(g * linear.weight.sum()), linear)
    return linear, grads


@row("let grads = loss.backward();")
def test_loss_backward_returns_the_gradients():
    w = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    x = torch.tensor([0.5, 0.25, -1.0])
    grads = bn.backward((w * x).sum())
    assert torch.equal(bn.grad(w, grads), x)  # d(w.x)/dw = x
    assert w.grad is None  # nothing accumulates in `.grad`: no zero_grad, as Burn


@row("tensor.grad(&grads)")
def test_tensor_grad_is_none_when_the_loss_does_not_depend_on_it():
    w, unused = torch.ones(3, requires_grad=True), torch.ones(3, requires_grad=True)
    grads = bn.backward((w * w).sum())
    assert torch.equal(bn.grad(w, grads), 2 * w.detach())
    assert bn.grad(unused, grads) is None


@row("GradientsParams::from_grads(grads, &model)")
def test_from_grads_holds_every_parameter_of_the_model():
    model, loss = model_and_loss()
    grads = bn.backward(loss)
    expected = bn.grad(model.linear1.weight, grads).clone()
    grads_p = GradientsParams.from_grads(grads, model)
    assert len(grads_p) == 4
    assert torch.equal(grads_p.get(model.linear1.weight), expected)


@row("GradientsParams::from_module(&mut grads, &model.conv1)")
def test_from_module_takes_the_parts_gradients_out_of_grads():
    model, loss = model_and_loss()
    grads = bn.backward(loss)
    grads_conv1 = GradientsParams.from_module(grads, model.conv1)
    assert len(grads_conv1) == 2 and grads_conv1.get(model.conv1.weight) is not None
    assert grads_conv1.get(model.linear1.weight) is None
    # Burn removes them from `grads`: what is left is the rest of the model's.
    rest = GradientsParams.from_grads(grads, model)
    assert len(rest) == 2 and rest.get(model.conv1.weight) is None


@row("GradientsParams::from_params(&mut grads, &model, &[id])")
def test_from_params_takes_the_listed_parameters():
    model, loss = model_and_loss()
    grads = bn.backward(loss)
    grads_bias = GradientsParams.from_params(grads, model.linear1, [model.linear1.bias])
    assert len(grads_bias) == 1 and grads_bias.get(model.linear1.bias) is not None
    assert bn.grad(model.linear1.bias, grads) is None  # removed, as from_module
    assert bn.grad(model.linear1.weight, grads) is not None


@row("GradientsAccumulator::new(), accumulate(&model, grads), grads()")
def test_gradients_accumulator_sums_then_resets():
    model = nn.Linear(2, 1)
    acc = GradientsAccumulator()
    for scale in (1.0, 2.0):
        loss = scale * model(torch.ones(1, 2)).sum()
        acc.accumulate(model, GradientsParams.from_grads(bn.backward(loss), model))
    grads = acc.grads()
    assert torch.allclose(grads.get(model.weight), torch.full((1, 2), 3.0))
    assert len(acc.grads()) == 0  # `grads()` takes them: the accumulator starts again


@row("AdamConfig::new().init()")
def test_adam_defaults_and_first_step():
    linear, grads = linear_and_grad(0.5)
    optim = AdamConfig().init()
    linear = optim.step(0.1, linear, grads)
    # First step with bias correction: w -= lr * g / (|g| + epsilon), Burn's epsilon 1e-5.
    expected = 1.0 - 0.1 * 0.5 / (0.5 + 1e-5)
    assert torch.allclose(linear.weight, torch.full((2, 2), expected), atol=1e-7)


@row("SgdConfig, AdamWConfig, RmsPropConfig, AdaGradConfig")
def test_optimizer_configs_have_burns_defaults():
    # burn-optim's #[config(default = ..)] values.
    assert (SgdConfig().weight_decay, SgdConfig().momentum, SgdConfig().gradient_clipping) == (
        None,
        None,
        None,
    )
    adamw = AdamWConfig()
    assert (adamw.beta_1, adamw.beta_2, adamw.epsilon, adamw.weight_decay) == (
        0.9,
        0.999,
        1e-5,
        1e-4,
    )
    rms = RmsPropConfig()
    assert (rms.alpha, rms.momentum, rms.epsilon, rms.centered) == (0.99, 0.9, 1e-5, False)
    adagrad = AdaGradConfig()
    assert (adagrad.lr_decay, adagrad.epsilon, adagrad.weight_decay) == (0.0, 1e-5, None)
    # AdamW's decay is decoupled: w * (1 - lr * decay), then Adam's step.
    linear, grads = linear_and_grad(0.5)
    linear = AdamWConfig().init().step(0.1, linear, grads)
    expected = 1.0 * (1 - 0.1 * 1e-4) - 0.1 * 0.5 / (0.5 + 1e-5)
    assert torch.allclose(linear.weight, torch.full((2, 2), expected), atol=1e-7)
    # SGD: w -= lr * g.
    linear, grads = linear_and_grad(0.5)
    assert torch.allclose(SgdConfig().init().step(0.1, linear, grads).weight, torch.tensor(0.95))


@row(
    "WeightDecayConfig::new(penalty), MomentumConfig { .. }, "
    "GradientClippingConfig::Value(x) / Norm(x)"
)
def test_weight_decay_momentum_and_clipping():
    config = SgdConfig(
        weight_decay=WeightDecayConfig(0.1),
        momentum=MomentumConfig(momentum=0.9, dampening=0.1, nesterov=False),
    )
    optim = config.init()
    linear = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        linear.weight.fill_(1.0)
    w, velocity = 1.0, None
    for _ in range(3):
        grads = GradientsParams.from_grads(bn.backward(0.5 * linear.weight.sum()), linear)
        linear = optim.step(0.1, linear, grads)
        g = 0.5 + 0.1 * w  # Burn's WeightDecay: grad + penalty * param
        velocity = g if velocity is None else 0.9 * velocity + (1 - 0.1) * g  # Burn's Momentum
        w -= 0.1 * velocity
    assert linear.weight.item() == pytest.approx(w, abs=1e-6)
    value = SgdConfig(gradient_clipping=GradientClippingConfig.value(0.2)).init()
    linear, grads = linear_and_grad(0.5)
    assert torch.allclose(value.step(1.0, linear, grads).weight, torch.tensor(0.8))
    # Norm: each tensor on its own scaled to an L2 norm of at most x (here 4 x 0.5 -> norm 1).
    norm = SgdConfig(gradient_clipping=GradientClippingConfig.norm(0.5)).init()
    linear, grads = linear_and_grad(0.5)
    assert torch.allclose(norm.step(1.0, linear, grads).weight, torch.tensor(0.75), atol=1e-6)


@row("let model = optim.step(lr, model, grads);")
def test_optim_step_moves_only_the_given_parameters():
    model, loss = model_and_loss()
    conv_before = model.conv1.weight.detach().clone()
    linear_before = model.linear1.weight.detach().clone()
    grads = GradientsParams.from_module(bn.backward(loss), model.linear1)
    expected = linear_before - 0.5 * grads.get(model.linear1.weight)
    stepped = SgdConfig().init().step(0.5, model, grads)
    assert stepped is model
    assert torch.equal(model.conv1.weight, conv_before)
    assert torch.allclose(model.linear1.weight, expected)


@row(
    "ParamGroup::from_path(p), from_predicate(s), from_any_predicates(..), from_regex(r)?, "
    "from_any_regexes(..), all(), .fuse(g), .exclude(g)"
)
def test_param_group_matchers_as_burns():
    paths = ["conv1.weight", "conv1.bias", "linear1.weight", "linear1.bias"]
    assert ParamGroup.from_path("conv1.bias").select(paths) == ["conv1.bias"]  # exact path
    assert ParamGroup.from_path("conv1").select(paths) == []
    assert ParamGroup.from_predicate("bias").select(paths) == ["conv1.bias", "linear1.bias"]
    either = ParamGroup.from_any_predicates(["conv1.w", "linear1.b"])
    assert either.select(paths) == ["conv1.weight", "linear1.bias"]
    assert ParamGroup.from_regex(r"^linear\d\.").select(paths) == paths[2:]
    assert ParamGroup.from_any_regexes([r"weight$", r"^conv"]).select(paths) == paths[:3]
    assert ParamGroup.all().select(paths) == paths
    fused = ParamGroup.from_predicate("conv").fuse(ParamGroup.from_path("linear1.bias"))
    assert fused.select(paths) == ["conv1.weight", "conv1.bias", "linear1.bias"]
    assert ParamGroup.all().exclude(ParamGroup.from_predicate("bias")).select(paths) == [
        "conv1.weight",
        "linear1.weight",
    ]
    with pytest.raises(ValueError, match="regular expression"):
        ParamGroup.from_regex("(")


@row("optim.to_record() / optim.load_record(record)")
def test_optimizer_record_resumes_exactly():
    def run(steps: int, resume_after: int | None, load: bool = True):
        bn.seed(1)
        model, optim = nn.Linear(3, 2), AdamConfig().init()
        for step in range(steps):
            if step == resume_after:
                record = optim.to_record()
                optim = AdamConfig().init()
                optim = optim.load_record(record) if load else optim
            loss = model(torch.full((2, 3), float(step + 1))).square().sum()
            model = optim.step(0.01, model, GradientsParams.from_grads(bn.backward(loss), model))
        return model.weight.detach()

    straight, resumed = run(4, None), run(4, 2)
    assert torch.allclose(straight, resumed, atol=1e-7)
    # A fresh optimizer (no moments) after step 2 moves the weights differently.
    assert not torch.allclose(straight, run(4, 2, load=False), atol=1e-5)


def steps(scheduler, n: int) -> list[float]:
    return [float(scheduler.step()) for _ in range(n)]


@row("ConstantLr, or a plain f64")
def test_constant_lr():
    assert steps(ConstantLr(0.01), 3) == [0.01, 0.01, 0.01]


@row("LinearLrSchedulerConfig::new(initial, final, num_iters)")
def test_linear_scheduler_goes_from_initial_to_final_then_stays():
    lrs = steps(LinearLrSchedulerConfig(0.9, 0.1, 4).init(), 7)
    assert lrs == pytest.approx([0.9, 0.7, 0.5, 0.3, 0.1, 0.1, 0.1])


@row("ExponentialLrSchedulerConfig::new(initial, gamma)")
def test_exponential_scheduler_starts_at_initial():
    assert steps(ExponentialLrSchedulerConfig(0.8, 0.5).init(), 3) == pytest.approx([0.8, 0.4, 0.2])


@row("CosineAnnealingLrSchedulerConfig::new(initial, num_iters).with_min_lr(m)")
def test_cosine_scheduler_reaches_min_lr_at_num_iters():
    lrs = steps(CosineAnnealingLrSchedulerConfig(0.5, 4).with_min_lr(0.1).init(), 6)
    expected = [0.1 + 0.2 * (1 + math.cos(i / 4 * math.pi)) for i in range(6)]
    assert lrs == pytest.approx(expected)  # past num_iters it rises again (Burn main, no restart)
    assert lrs[4] == pytest.approx(0.1) and lrs[5] > lrs[4]


@row("NoamLrSchedulerConfig::new(factor).with_warmup_steps(n).with_model_size(d)")
def test_noam_scheduler():
    lrs = steps(NoamLrSchedulerConfig(2.0).with_warmup_steps(3).with_model_size(16).init(), 6)
    expected = [2.0 * 16**-0.5 * min(s**-0.5, s * 3**-1.5) for s in range(1, 7)]
    assert lrs == pytest.approx(expected)
    assert max(lrs) == lrs[2]  # warms up to the peak at warmup_steps


@row("StepLrSchedulerConfig::new(initial, step_size)")
def test_step_scheduler_decays_by_gamma_every_step_size():
    lrs = steps(StepLrSchedulerConfig(0.5, 2).init(), 5)  # Burn's gamma default 0.1
    assert lrs == pytest.approx([0.5, 0.5, 0.05, 0.05, 0.005])


def test_composed_scheduler_multiplies_by_default():
    composed = (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 4))
        .linear(LinearLrSchedulerConfig(0.5, 0.1, 4))
        .init()
    )
    cosine = steps(CosineAnnealingLrSchedulerConfig(1.0, 4).init(), 5)
    linear = steps(LinearLrSchedulerConfig(0.5, 0.1, 4).init(), 5)
    assert steps(composed, 5) == pytest.approx([c * lin for c, lin in zip(cosine, linear)])

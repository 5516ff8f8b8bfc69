"""GradScaler on burnish's returned gradients: torch.amp.GradScaler's scale sequence, skipped
steps that leave parameters and optimizer state alone, no double unscaling, records."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    GradScaler,
    MomentumConfig,
    RmsPropConfig,
    SgdConfig,
)

OPTIMIZERS = {
    "adam": AdamConfig(),
    "adamw": AdamWConfig(),
    "sgd": SgdConfig(),
    "sgd-momentum": SgdConfig(momentum=MomentumConfig()),
    "adagrad": AdaGradConfig(),
    "rmsprop": RmsPropConfig(),  # no fused kernel: reads the flag back
}


def model_and_data(seed: int = 0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)), torch.randn(16, 6)


def scaled_grads(scaler: GradScaler, model: nn.Module, x: torch.Tensor, overflow: bool):
    loss = model(x).pow(2).mean()
    if overflow:
        loss = loss * float("inf")
    return GradientsParams.from_grads(bn.backward(scaler.scale(loss)), model)


def equal_records(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(equal_records(a[k], b[k]) for k in a)
    return a == b


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_overflowing_step_is_skipped_and_the_scale_backs_off(name):
    model, x = model_and_data()
    optim, scaler = OPTIMIZERS[name].init(), GradScaler(growth_interval=3)
    scales = []
    for iteration in range(8):
        overflow = iteration in (2, 3)
        before = [p.detach().clone() for p in model.parameters()]
        state_before = optim.to_record()
        grads = scaled_grads(scaler, model, x, overflow)
        model = scaler.step(optim, 0.01, model, grads)
        scaler.update()
        scales.append(scaler.get_scale().item())
        unchanged = all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
        assert unchanged == overflow, iteration
        if overflow and iteration > 2:  # the optimizer's state exists after the first steps
            assert equal_records(state_before, optim.to_record())
        assert len(grads) == 0  # consumed either way
    assert scales == [2.0**16, 2.0**16, 2.0**15, 2.0**14, 2.0**14, 2.0**14, 2.0**15, 2.0**15]
    record = optim.to_record()["state"]
    if "step" in next(iter(record.values())):
        assert {entry["step"] for entry in record.values()} == {6}  # skipped steps don't count


def test_scale_sequence_matches_torch_amp_grad_scaler():
    model, x = model_and_data()
    ours = GradScaler(init_scale=2.0**10, growth_interval=2)
    reference = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=2)
    reference_model, _ = model_and_data()
    torch_optim = torch.optim.SGD(reference_model.parameters(), lr=0.01)
    optim = SgdConfig().init()
    pattern = [False, False, False, True, False, True, True, False, False, False]
    for overflow in pattern:
        model = ours.step(optim, 0.01, model, scaled_grads(ours, model, x, overflow))
        ours.update()
        torch_optim.zero_grad()
        loss = reference_model(x).pow(2).mean() * (float("inf") if overflow else 1.0)
        reference.scale(loss).backward()
        reference.step(torch_optim)
        reference.update()
        assert ours.get_scale().item() == reference.get_scale()
    for mine, theirs in zip(model.parameters(), reference_model.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_gradients_are_unscaled_once_before_clipping():
    model, x = model_and_data()
    twin, _ = model_and_data()
    expected = GradientsParams.from_grads(bn.backward(twin(x).pow(2).mean()), twin)
    scaler = GradScaler()
    grads = scaled_grads(scaler, model, x, overflow=False)
    assert scaler.unscale(grads) is grads
    scaler.unscale(grads)  # a second call does nothing
    for (name, grad), (twin_name, twin_grad) in zip(grads.items(), expected.items()):
        assert name == twin_name
        torch.testing.assert_close(grad, twin_grad)
    # Clipping by value sees the true gradients: a threshold above them changes nothing.
    clipped = SgdConfig(gradient_clipping=GradientClippingConfig.value(1e3)).init()
    reference = SgdConfig().init()
    reference.step(0.1, twin, expected)
    model = scaler.step(clipped, 0.1, model, grads)  # already unscaled: not divided again
    for mine, theirs in zip(model.parameters(), twin.parameters()):
        torch.testing.assert_close(mine, theirs)


def test_scaling_context_makes_backward_scale_the_loss_and_is_left_cleanly():
    model, x = model_and_data()
    plain = GradientsParams.from_grads(bn.backward(model(x).sum()), model)
    scaler = GradScaler(init_scale=8.0)
    with scaler.scaling():
        scaled = GradientsParams.from_grads(bn.backward(model(x).sum()), model)
    after = GradientsParams.from_grads(bn.backward(model(x).sum()), model)
    for name, grad in plain.items():
        torch.testing.assert_close(scaled.get(name), grad * 8.0)
        torch.testing.assert_close(after.get(name), grad)


def test_record_round_trip_and_disabled_scaler():
    scaler = GradScaler(growth_interval=5)
    model, x = model_and_data()
    optim = AdamConfig().init()
    for overflow in (True, False, False):
        model = scaler.step(optim, 0.01, model, scaled_grads(scaler, model, x, overflow))
        scaler.update()
    record = scaler.to_record()
    assert record == {"scale": 2.0**15, "growth_tracker": 2}
    restored = GradScaler(growth_interval=5).load_record(record)
    assert restored.to_record() == record
    off = GradScaler(enabled=False)
    loss = model(x).sum()
    assert off.scale(loss) is loss
    off.update()
    assert off.to_record()["scale"] == 2.0**16


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"init_scale": 0.0}, "`init_scale` must be > 0"),
        ({"growth_factor": 1.0}, "`growth_factor` must be > 1"),
        ({"backoff_factor": 1.5}, "`backoff_factor` must be in (0, 1)"),
        ({"growth_interval": 0}, "`growth_interval` must be an integer >= 1"),
    ],
)
def test_invalid_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        GradScaler(**kwargs)

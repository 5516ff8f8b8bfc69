"""LR schedulers: closed-form sequences (annotated per step), Burn's validation, parity with
`torch.optim.lr_scheduler`, save/resume mid-schedule."""

from __future__ import annotations

import math

import pytest
import torch

from burnish.errors import ConfigError, RecordError
from burnish.lr_scheduler import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
    as_scheduler,
)


def run(scheduler: LrScheduler, n: int) -> list[float]:
    return [scheduler.step() for _ in range(n)]


# -- closed-form sequences ------------------------------------------------------------------


def test_constant():
    assert run(ConstantLr(0.3), 3) == [0.3, 0.3, 0.3]


def test_linear_sequence():
    lrs = run(LinearLrSchedulerConfig(0.9, 0.5, 4).init(), 7)
    expected = [
        0.9,  # step 0: initial_lr (the first step returns it)
        0.8,  # step 1: 0.9 - 0.4 * 1/4
        0.7,  # step 2
        0.6,  # step 3
        0.5,  # step 4 = num_iters: final_lr
        0.5,  # then stays at final_lr
        0.5,
    ]
    assert lrs == pytest.approx(expected, abs=1e-12)


def test_exponential_sequence():
    lrs = run(ExponentialLrSchedulerConfig(0.8, 0.5).init(), 4)
    assert lrs == pytest.approx([0.8, 0.4, 0.2, 0.1])  # 0.8 * 0.5^i


def test_cosine_sequence_continues_without_restart():
    lrs = run(CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1).init(), 6)
    expected = [
        0.5,  # cos(0): initial_lr
        0.3,  # cos(pi/2): midway
        0.1,  # cos(pi): min_lr at num_iters
        0.3,  # cos(3pi/2): rising again (no restart, current Burn)
        0.5,  # cos(2pi)
        0.3,
    ]
    assert lrs == pytest.approx(expected, abs=1e-12)


def test_noam_sequence():
    factor, warmup, size = 2.0, 4, 16
    lrs = run(NoamLrSchedulerConfig(factor, warmup, size).init(), 8)
    scale = factor / math.sqrt(size)
    expected = [scale * t * warmup**-1.5 for t in (1, 2, 3, 4)]  # warm-up: linear in t
    expected += [scale * t**-0.5 for t in (5, 6, 7, 8)]  # decay: 1/sqrt(t)
    assert lrs == pytest.approx(expected)
    assert max(lrs) == pytest.approx(factor / math.sqrt(size * warmup))  # peak at warmup


def test_noam_defaults():
    config = NoamLrSchedulerConfig(1.0)
    assert (config.warmup_steps, config.model_size) == (4000, 512)


def test_step_sequence():
    lrs = run(StepLrSchedulerConfig(1.0, 2, gamma=0.5).init(), 5)
    assert lrs == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.25])  # 1.0 * 0.5^(i // 2)


@pytest.mark.parametrize(
    ("reduction", "expected"),
    [
        (SchedulerReduction.Prod, [0.5 * 0.8, 0.5 * 0.4, 0.5 * 0.2]),
        (SchedulerReduction.Sum, [0.5 + 0.8, 0.5 + 0.4, 0.5 + 0.2]),
        (SchedulerReduction.Avg, [(0.5 + 0.8) / 2, (0.5 + 0.4) / 2, (0.5 + 0.2) / 2]),
    ],
)
def test_composed(reduction, expected):
    config = (
        ComposedLrSchedulerConfig(reduction=reduction)
        .constant(0.5)
        .exponential(ExponentialLrSchedulerConfig(0.8, 0.5))
    )
    assert run(config.init(), 3) == pytest.approx(expected)


def test_composed_of_nothing_is_burns_identity():
    assert ComposedLrSchedulerConfig().init().step() == 1.0
    for reduction in (SchedulerReduction.Avg, SchedulerReduction.Sum):  # 0.0, a float
        lr = ComposedLrSchedulerConfig([], reduction).init().step()
        assert lr == 0.0 and type(lr) is float


def test_sequential_next_scheduler_starts_fresh_at_milestone():
    config = SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(0.1, 0.5, 2), ExponentialLrSchedulerConfig(0.8, 0.5), 0.01],
        [3, 5],
    )
    lrs = run(config.init(), 7)
    expected = [
        0.1,  # linear step 0
        0.3,  # linear step 1
        0.5,  # linear step 2 (final)
        0.8,  # milestone 3: exponential's first step
        0.4,  # exponential step 1
        0.01,  # milestone 5: constant
        0.01,
    ]
    assert lrs == pytest.approx(expected)


# -- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (LinearLrSchedulerConfig(0.0, 0.5, 10), "Initial learning rate must be greater than 0"),
        (LinearLrSchedulerConfig(1.5, 0.5, 10), "Initial learning rate .* at most 1"),
        (LinearLrSchedulerConfig(0.5, -0.1, 10), "Final learning rate must be at least 0"),
        (LinearLrSchedulerConfig(0.5, 0.1, 0), "Number of iterations must be at least 1"),
        (ExponentialLrSchedulerConfig(0.5, 0.0), "Gamma must be greater than 0"),
        (ExponentialLrSchedulerConfig(0.5, 1.5), "Gamma .* at most 1"),
        (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6), "Minimum learning rate"),
        (CosineAnnealingLrSchedulerConfig(2.0, 10), "Initial learning rate"),
        (NoamLrSchedulerConfig(1.0, warmup_steps=0), "Warm-up steps must be at least 1"),
        (NoamLrSchedulerConfig(1.0, model_size=0), "Model size must be at least 1"),
        (StepLrSchedulerConfig(0.1, 0), "Step size must be at least 1"),
        (SequentialLrSchedulerConfig([], []), "At least one scheduler"),
        (SequentialLrSchedulerConfig([0.1, 0.2], []), "one less than the number of schedulers"),
        (SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [4, 4]), "strictly increasing"),
        (SequentialLrSchedulerConfig([0.1, 0.2], [0]), "greater than zero"),
    ],
)
def test_invalid_configs_raise_clear_errors(config, message):
    with pytest.raises(ConfigError, match=message):
        config.init()


def test_step_scheduler_only_warns_on_odd_values_as_burn():
    with pytest.warns(UserWarning, match="Gamma 1.5 is outside"):
        assert run(StepLrSchedulerConfig(0.1, 1, gamma=1.5).init(), 2) == pytest.approx([0.1, 0.15])


# -- parity with torch.optim.lr_scheduler ----------------------------------------------------


def _torch_sequence(make, base_lr, n):
    optim = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
    scheduler = make(optim)
    lrs = []
    for _ in range(n):
        lrs.append(optim.param_groups[0]["lr"])
        optim.step()
        scheduler.step()
    return lrs


@pytest.mark.parametrize(
    ("config", "make", "base_lr"),
    [
        (
            CosineAnnealingLrSchedulerConfig(0.1, 10, min_lr=0.01),
            lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.01),
            0.1,
        ),
        (
            StepLrSchedulerConfig(0.1, 3, gamma=0.5),
            lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
            0.1,
        ),
        (
            ExponentialLrSchedulerConfig(0.1, 0.9),
            lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
            0.1,
        ),
        (
            LinearLrSchedulerConfig(0.1, 0.02, 10),
            lambda o: torch.optim.lr_scheduler.LinearLR(
                o, start_factor=1.0, end_factor=0.2, total_iters=10
            ),
            0.1,
        ),
    ],
    ids=["cosine", "step", "exponential", "linear"],
)
def test_parity_with_torch(config, make, base_lr):
    n = 25  # past num_iters: cosine keeps following the curve like torch's
    assert run(config.init(), n) == pytest.approx(_torch_sequence(make, base_lr, n), abs=1e-9)


# -- records ------------------------------------------------------------------------------

ALL_CONFIGS = [
    LinearLrSchedulerConfig(0.9, 0.1, 5),
    ExponentialLrSchedulerConfig(0.5, 0.9),
    CosineAnnealingLrSchedulerConfig(0.5, 6),
    NoamLrSchedulerConfig(1.0, 3, 8),
    StepLrSchedulerConfig(0.5, 2),
    ComposedLrSchedulerConfig().linear(LinearLrSchedulerConfig(0.9, 0.1, 5)).constant(0.5),
    SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(0.1, 0.5, 2), CosineAnnealingLrSchedulerConfig(0.5, 4)], [3]
    ),
]


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: type(c).__name__)
def test_save_resume_mid_schedule(config):
    straight = run(config.init(), 10)
    first = config.init()
    head = run(first, 4)
    resumed = config.init().load_record(first.to_record())
    assert head + run(resumed, 6) == straight


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=lambda c: type(c).__name__)
def test_config_json_round_trip(config, tmp_path):
    assert type(config).load(config.save(tmp_path / "scheduler.json")) == config


def test_record_of_another_scheduler_fails():
    record = StepLrSchedulerConfig(0.5, 2).init().to_record()
    with pytest.raises(RecordError, match="saved by StepLrScheduler"):
        NoamLrSchedulerConfig(1.0).init().load_record(record | {"step": 3})


def test_as_scheduler():
    assert as_scheduler(0.01).step() == 0.01
    scheduler = StepLrSchedulerConfig(0.5, 2).init()
    assert as_scheduler(scheduler) is scheduler
    assert as_scheduler(ExponentialLrSchedulerConfig(0.5, 0.5)).step() == 0.5
    with pytest.raises(TypeError, match="Expected a learning rate"):
        as_scheduler("0.01")

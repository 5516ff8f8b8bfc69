"""Burn main's Muon, Adan and L-BFGS, and the AMSGrad / cautious options: semantics beyond
the golden numbers and torch's parity, records that resume exactly, and the errors.

The references here are per-tensor transcriptions of Burn's `step` functions
(`crates/burn-optim/src/optim/{muon,adan}.rs`), written plainly in float64 torch.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import burnish as bn
from burnish.errors import ConfigError, RecordError
from burnish.optim import (
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientClippingConfig,
    GradientsParams,
    LBFGSConfig,
    LineSearchFn,
    ModuleOptimizer,
    MomentumConfig,
    MuonConfig,
    ParamGroup,
    WeightDecayConfig,
)
from burnish.optim.line_search import cubic_interpolate
from burnish.record import DoublePrecisionSettings, NamedMpkFileRecorder

from tests.helpers import assert_close

F64 = torch.float64


class Matrices(nn.Module):
    """Weight matrices of several shapes (two alike, a tall one, a wide one), no biases."""

    def __init__(self, dtype=F64) -> None:
        super().__init__()
        bn.seed(3)
        self.a = nn.Linear(5, 5, bias=False, dtype=dtype)
        self.b = nn.Linear(5, 7, bias=False, dtype=dtype)  # weight [7, 5]: tall
        self.c = nn.Linear(7, 5, bias=False, dtype=dtype)  # weight [5, 7]: wide
        self.d = nn.Linear(5, 5, bias=False, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.d(torch.tanh(self.c(torch.tanh(self.b(torch.tanh(self.a(x)))))))


def _batches(count: int, dtype=F64):
    gen = torch.Generator().manual_seed(11)
    return [
        (
            torch.randn(6, 5, generator=gen, dtype=dtype),
            torch.randn(6, 5, generator=gen, dtype=dtype),
        )
        for _ in range(count)
    ]


def _loss(model, batch):
    x, y = batch
    return ((model(x) - y) ** 2).mean()


def _train(model, optim, batches, lrs=None):
    for i, batch in enumerate(batches):
        lr = 0.02 if lrs is None else lrs[i]
        grads = GradientsParams.from_grads(bn.backward(_loss(model, batch)), model)
        model = optim.step(lr, model, grads)
    return model


# -- Muon ------------------------------------------------------------------------------------


def _newton_schulz(g, coefficients, steps, eps):
    a, b, c = coefficients
    tall = g.shape[0] > g.shape[1]
    x = g.T if tall else g
    x = x / x.pow(2).sum().sqrt().clamp_min(eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if tall else x


def _muon_reference(model, batches, config: MuonConfig, lr=0.02):
    """Burn's `Muon::step`, one tensor at a time."""
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    velocity: dict[str, torch.Tensor] = {}
    mom = config.momentum
    for batch in batches:
        model.load_state_dict(params)
        grads = dict(zip(params, torch.autograd.grad(_loss(model, batch), model.parameters())))
        for name, grad in grads.items():
            if name in velocity:
                velocity[name] = velocity[name] * mom.momentum + grad * (1 - mom.dampening)
            else:
                velocity[name] = grad.clone()
            update = grad + velocity[name] * mom.momentum if mom.nesterov else velocity[name]
            update = _newton_schulz(update, config.ns_coefficients, config.ns_steps, config.epsilon)
            # Burn's ratio is written for its `[d_input, d_output]` weights: torch's transposed.
            adjusted = lr * config.adjust_lr_fn.adjustment_ratio(list(params[name].T.shape))
            param = params[name]
            if config.weight_decay is not None:
                param = param * (1 - lr * config.weight_decay.penalty)
            params[name] = param - update * adjusted
    return params


MUON_CONFIGS = {
    "defaults": MuonConfig(),
    "heavy-ball-dampened-decay": MuonConfig(
        weight_decay=WeightDecayConfig(0.05),
        momentum=MomentumConfig(momentum=0.9, dampening=0.1, nesterov=False),
        adjust_lr_fn=AdjustLrFn.MatchRmsAdamW,
    ),
    "nesterov-dampened-7-steps": MuonConfig(
        momentum=MomentumConfig(momentum=0.8, dampening=0.3, nesterov=True), ns_steps=7
    ),
}


@pytest.mark.parametrize("name", sorted(MUON_CONFIGS))
def test_muon_equals_burns_step_tensor_by_tensor(name):
    """Stacking matrices by shape (a tall, a wide, two alike) changes nothing."""
    config = MUON_CONFIGS[name]
    batches = _batches(8)
    model = _train(Matrices(), config.init(), batches)
    expected = _muon_reference(Matrices(), batches, config)
    assert_close({n: p.detach() for n, p in model.named_parameters()}, expected,
                 atol=1e-12, rtol=1e-12)  # fmt: skip


def test_muon_state_is_a_velocity_per_matrix_and_resumes_exactly():
    config, batches = MuonConfig(weight_decay=WeightDecayConfig(0.1)), _batches(6)
    straight = _train(Matrices(), config.init(), batches)
    first = config.init()
    model = _train(Matrices(), first, batches[:3])
    record = first.to_record()
    assert record["optimizer"] == "Muon"
    assert set(record["state"]) == {"a.weight", "b.weight", "c.weight", "d.weight"}
    assert set(record["state"]["b.weight"]) == {"velocity"}
    copy = Matrices()
    copy.load_state_dict(model.state_dict())
    resumed = _train(copy, config.init().load_record(record), batches[3:])
    assert_close(dict(resumed.named_parameters()), dict(straight.named_parameters()),
                 atol=0, rtol=0)  # fmt: skip


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_muon_keeps_the_dtype_and_converges(dtype):
    bn.seed(0)
    model = nn.Linear(4, 6, bias=False, dtype=dtype)
    target = torch.randn(6, 4).to(dtype)
    optim = MuonConfig().init()
    for step in range(200):
        loss = ((model.weight - target) ** 2).sum()
        grads = GradientsParams.from_grads(bn.backward(loss), model)
        model = optim.step(0.05 * (1 - step / 200), model, grads)
    assert model.weight.dtype == dtype
    assert optim.to_record()["state"]["weight"]["velocity"].dtype == dtype
    assert float(((model.weight - target) ** 2).sum().detach()) < 0.05


def test_muon_with_adamw_for_the_rest():
    """The documented split: Muon on the weight matrices, AdamW on the biases."""
    bn.seed(1)
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    muon, adamw = MuonConfig().init(), AdamWConfig().init()
    x = torch.randn(4, 5)
    grads = bn.backward(model(x).pow(2).mean())
    matrices = GradientsParams.from_params(grads, model, [model[0].weight, model[2].weight])
    rest = GradientsParams.from_grads(grads, model)
    model = muon.step(0.02, model, matrices)
    model = adamw.step(1e-3, model, rest)
    assert sorted(muon.to_record()["state"]) == ["0.weight", "2.weight"]
    assert sorted(adamw.to_record()["state"]) == ["0.bias", "2.bias"]
    assert all(not torch.equal(p, before[n]) for n, p in model.named_parameters())


def test_muon_adjust_lr_fn_scales_the_update_by_the_shape():
    """One step from zero momentum: the update's RMS is the lr ratio times NS's."""
    for adjust in AdjustLrFn:
        model, batch = Matrices(), _batches(1)[0]
        before = model.b.weight.detach().clone()
        _train(model, MuonConfig(adjust_lr_fn=adjust).init(), [batch], lrs=[0.01])
        delta = (model.b.weight.detach() - before).norm()
        reference = Matrices()
        _train(reference, MuonConfig(adjust_lr_fn=adjust).init(), [batch], lrs=[0.01 / 7])
        ratio = delta / (reference.b.weight.detach() - before).norm()
        assert ratio == pytest.approx(7.0, rel=1e-9)  # linear in the lr
        # b = nn.Linear(5, 7): Burn's weight [5, 7], so Original gives sqrt(max(1, 5 / 7)) = 1.
        expected = 1.0 if adjust is AdjustLrFn.Original else 0.2 * math.sqrt(7)
        assert adjust.ratio_for(model.b.weight.shape) == pytest.approx(expected)
        assert adjust.adjustment_ratio([7, 5]) == pytest.approx(adjust.ratio_for([5, 7]))


# -- Adan ------------------------------------------------------------------------------------


def _adan_reference(params, grads_per_step, config: AdanConfig, lr):
    """Burn's `Adan::step` per tensor; `grads_per_step`: one {name: grad} dict per step."""
    b1, b2, b3, eps = config.beta_1, config.beta_2, config.beta_3, config.epsilon
    params, state = dict(params), {}
    for grads in grads_per_step:
        for name, g in grads.items():
            if name in state:
                s = state[name]
                diff = s["neg"] + g
                s["m"] = s["m"] * b1 + g * (1 - b1)
                s["n"] = s["n"] * b2 + diff * (1 - b2)
                s["v"] = s["v"] * b3 + (diff * b2 + g) ** 2 * (1 - b3)
                s["neg"], s["t"] = -g, s["t"] + 1
            else:
                s = state[name] = {"t": 1, "m": g * (1 - b1), "v": g * g * (1 - b3),
                                   "n": torch.zeros_like(g), "neg": -g}  # fmt: skip
            t = s["t"]
            denom = s["v"].sqrt() / math.sqrt(1 - b3**t) + eps
            update = s["m"] / (1 - b1**t) / denom + s["n"] * b2 / (1 - b2**t) / denom
            decay = lr * config.weight_decay
            if config.no_prox:
                params[name] = params[name] * (1 - decay) - update * lr
            else:
                params[name] = (params[name] - update * lr) / (1 + decay)
    return params


@pytest.mark.parametrize("no_prox", [False, True])
def test_adan_equals_burns_step_with_a_parameter_joining_late(no_prox):
    """Steps 1-2 move `a` only; from step 3 `b` joins, its first step beside `a`'s third."""
    config = AdanConfig(weight_decay=0.05, no_prox=no_prox)
    gen = torch.Generator().manual_seed(5)
    start = {"a": torch.randn(3, 2, generator=gen, dtype=F64),
             "b": torch.randn(4, generator=gen, dtype=F64)}  # fmt: skip
    steps = [
        {name: torch.randn(value.shape, generator=gen, dtype=F64) for name, value in start.items()
         if name == "a" or i >= 2}
        for i in range(6)
    ]  # fmt: skip
    module = nn.Module()
    module.a, module.b = nn.Parameter(start["a"].clone()), nn.Parameter(start["b"].clone())
    optim = config.init()
    for grads in steps:
        given = GradientsParams()
        for name, grad in grads.items():
            given.register(getattr(module, name), grad.clone(), name=name)
        optim.step(0.03, module, given)
    expected = _adan_reference(start, steps, config, 0.03)
    assert_close({"a": module.a.detach(), "b": module.b.detach()}, expected, atol=1e-12, rtol=0)
    assert optim.to_record()["state"]["b"]["step"] == 4


# -- AMSGrad and cautious weight decay --------------------------------------------------------


def test_amsgrad_optimizer_loads_a_record_saved_without_it():
    """As Burn: a missing maximum starts from the second moment."""
    batches = _batches(4)
    plain = AdamConfig().init()
    model = _train(Matrices(), plain, batches[:2])
    amsgrad = AdamConfig(amsgrad=True).init().load_record(plain.to_record())
    _train(model, amsgrad, batches[2:])
    state = amsgrad.to_record()["state"]["a.weight"]
    assert (state["max_moment_2"] >= state["moment_2"]).all()


@pytest.mark.parametrize("skip", [True, False])
def test_cautious_weight_decay_under_the_grad_scaler_flag(skip):
    """With `found_inf` set nothing moves (decay included); unset, it is a plain step."""
    config = AdamWConfig(weight_decay=0.1, cautious_weight_decay=True)
    batch = _batches(1)[0]
    guarded, plain = Matrices(), Matrices()
    optim, reference = config.init(), config.init()
    grads = GradientsParams.from_grads(bn.backward(_loss(guarded, batch)), guarded)
    optim._step(0.05, guarded, grads, torch.tensor(1.0 if skip else 0.0))
    expected = Matrices() if skip else _train(plain, reference, [batch], lrs=[0.05])
    assert_close(dict(guarded.named_parameters()), dict(expected.named_parameters()),
                 atol=1e-15, rtol=0)  # fmt: skip


# -- L-BFGS ----------------------------------------------------------------------------------


def _lbfgs_closure(batch):
    return lambda model: _loss(model, batch)


@pytest.mark.parametrize("line_search", [None, LineSearchFn.StrongWolfe])
def test_lbfgs_record_round_trip_resumes_exactly(line_search, tmp_path):
    """lbfgs.rs `test_lbfgs_burnpack_round_trip`, through a real recorder file."""
    config = LBFGSConfig(max_iter=3, history_size=2, line_search_fn=line_search)
    batch = _batches(1)[0]
    straight, optim = Matrices(), config.init()
    for _ in range(4):
        straight, _ = optim.step(0.5, straight, _lbfgs_closure(batch))
    first, model = config.init(), Matrices()
    for _ in range(2):
        model, _ = first.step(0.5, model, _lbfgs_closure(batch))
    recorder = NamedMpkFileRecorder(DoublePrecisionSettings())  # float64 kept exactly
    recorder.record(first.to_record(), tmp_path / "lbfgs")
    record = recorder.load(tmp_path / "lbfgs.mpk")
    assert 1 <= len(record["state"]["history_s"]) <= 2  # at most `history_size` pairs
    resumed = config.init().load_record(record)
    for _ in range(2):
        model, _ = resumed.step(0.5, model, _lbfgs_closure(batch))
    assert_close(dict(model.named_parameters()), dict(straight.named_parameters()),
                 atol=0, rtol=0)  # fmt: skip


def test_lbfgs_moves_only_trainable_parameters_and_takes_burns_closure_pair():
    model, batch = Matrices(), _batches(1)[0]
    model.a.weight.requires_grad_(False)
    frozen = model.a.weight.detach().clone()
    before = model.b.weight.detach().clone()

    def closure(module):
        loss = _loss(module, batch)
        return loss, GradientsParams.from_grads(bn.backward(loss), module)

    model, loss = LBFGSConfig(max_iter=2).init().step(0.1, model, closure)
    assert isinstance(loss, float) and loss < float(_loss(Matrices(), batch).detach())
    assert torch.equal(model.a.weight, frozen)
    assert not torch.equal(model.b.weight, before)


def test_lbfgs_errors_name_the_problem_and_the_fix():
    model, batch = Matrices(), _batches(1)[0]
    optim = LBFGSConfig().init()
    grads = GradientsParams.from_grads(bn.backward(_loss(model, batch)), model)
    with pytest.raises(TypeError, match=r"takes a closure.*Received: GradientsParams"):
        optim.step(0.1, model, grads)
    with pytest.raises(TypeError, match=r"loss as a scalar tensor.*Received: str"):
        optim.step(0.1, model, lambda m: "loss")
    with pytest.raises(TypeError, match=r"\(loss, GradientsParams\).*Received a dict"):
        optim.step(0.1, model, lambda m: (_loss(m, batch), {}))
    with pytest.raises(TypeError, match="`lr` must be a float"):
        optim.step("0.1", model, _lbfgs_closure(batch))
    for param in model.parameters():
        param.requires_grad_(False)
    with pytest.raises(ValueError, match="no trainable parameter"):
        optim.step(0.1, model, _lbfgs_closure(batch))
    with pytest.raises(RecordError, match=r"from LBFGS.to_record\(\).*'Adam'"):
        optim.load_record(AdamConfig().init().to_record())


# -- configs ---------------------------------------------------------------------------------

BAD_CONFIGS = [
    (lambda: MuonConfig(ns_steps=0), r"`ns_steps`.*\[1, 100\).*ns_steps=0"),
    (lambda: MuonConfig(ns_steps=2.5), r"`ns_steps` must be an int.*2.5"),
    (lambda: MuonConfig(ns_coefficients=(1.0, 2.0)), r"`ns_coefficients` must be three"),
    (lambda: MuonConfig(epsilon=0.0), r"`epsilon` must be > 0.*epsilon=0.0"),
    (lambda: MuonConfig(momentum=MomentumConfig(momentum=1.0)), r"`momentum.momentum`.*1.0"),
    (lambda: MuonConfig(adjust_lr_fn="original"), r"AdjustLrFn.Original.*'original'"),
    (lambda: AdanConfig(beta_3=1.0), r"`beta_3` must be in \[0, 1\).*beta_3=1.0"),
    (lambda: AdanConfig(weight_decay=-0.1), r"`weight_decay` must be >= 0.*-0.1"),
    (lambda: AdanConfig(epsilon=float("nan")), r"`epsilon` must be >= 0.*nan"),
    (lambda: LBFGSConfig(max_iter=0), r"`max_iter` must be an int >= 1.*max_iter=0"),
    (lambda: LBFGSConfig(history_size=True), r"`history_size` must be an int >= 1"),
    (lambda: LBFGSConfig(max_eval=0), r"`max_eval` must be an int >= 1.*max_eval=0"),
    (lambda: LBFGSConfig(tolerance_grad=-1.0), r"`tolerance_grad` must be >= 0"),
    (lambda: LBFGSConfig(line_search_fn="strong_wolfe"), r"LineSearchFn.StrongWolfe or None"),
    (lambda: AdamWConfig(beta_1=1.5, amsgrad=True), r"`beta_1` must be in \[0, 1\)"),
]


@pytest.mark.parametrize(("make", "message"), BAD_CONFIGS, ids=[m for _, m in BAD_CONFIGS])
def test_bad_config_values_are_refused_clearly(make, message):
    with pytest.raises(ConfigError, match=message):
        make()


def test_newer_configs_round_trip_through_json(tmp_path):
    configs = [
        MuonConfig(weight_decay=WeightDecayConfig(0.1), adjust_lr_fn=AdjustLrFn.MatchRmsAdamW),
        AdanConfig(no_prox=True, grad_clipping=GradientClippingConfig.norm(1.0)),
        LBFGSConfig(max_eval=30, line_search_fn=LineSearchFn.StrongWolfe),
        AdamConfig(amsgrad=True),
        AdamWConfig(amsgrad=True, cautious_weight_decay=True),
    ]
    for index, config in enumerate(configs):
        path = config.save(tmp_path / f"{index}.json")
        assert type(config).load(path) == config
    assert '"adjust_lr_fn": "MatchRmsAdamW"' in str(configs[0])
    assert MuonConfig().momentum == MomentumConfig(0.95, 0.0, nesterov=True)  # Burn's default
    assert LBFGSConfig().init().max_eval == 25


finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(finite, finite, finite, finite, finite, finite, finite, st.floats(0, 1e6))
def test_cubic_interpolate_stays_in_its_bounds(x1, f1, g1, x2, f2, g2, low, width):
    """Equal points, flat slopes and huge values never raise; the result is in the bounds."""
    for result in (
        cubic_interpolate(x1, f1, g1, x2, f2, g2, (low, low + width)),
        cubic_interpolate(x1, f1, g1, x1, f2, g2, (low, low + width)),
        cubic_interpolate(x1, f1, g1, x2, f2, g1),
    ):
        assert not math.isnan(result)
    assert low <= cubic_interpolate(x1, f1, g1, x2, f2, g2, (low, low + width)) <= low + width


def test_lbfgs_strong_wolfe_with_a_zero_learning_rate_moves_nothing():
    model, batch = Matrices(), _batches(1)[0]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    optim = LBFGSConfig(line_search_fn=LineSearchFn.StrongWolfe).init()
    model, _ = optim.step(0.0, model, _lbfgs_closure(batch))
    assert_close(dict(model.named_parameters()), before, atol=0, rtol=0)


def test_muon_in_a_module_optimizer_group_equals_the_split_by_hand():
    """Burn main's form: `ModuleOptimizer(AdamW).with_group(ParamGroup(weights), Muon)`."""

    def mlp():
        bn.seed(2)
        return nn.Sequential(nn.Linear(5, 8, dtype=F64), nn.Tanh(), nn.Linear(8, 3, dtype=F64))

    grouped_model, split_model = mlp(), mlp()
    grouped = ModuleOptimizer(AdamWConfig()).with_group(
        ParamGroup.from_regex(r"weight$"), MuonConfig()
    )
    muon, adamw = MuonConfig().init(), AdamWConfig().init()
    gen = torch.Generator().manual_seed(4)
    for _ in range(5):
        x = torch.randn(4, 5, generator=gen, dtype=F64)
        grads = GradientsParams.from_grads(bn.backward(grouped_model(x).pow(2).mean()),
                                           grouped_model)  # fmt: skip
        grouped.step(0.01, grouped_model, grads)
        grads = bn.backward(split_model(x).pow(2).mean())
        weights = [split_model[0].weight, split_model[2].weight]
        muon.step(0.01, split_model, GradientsParams.from_params(grads, split_model, weights))
        adamw.step(0.01, split_model, GradientsParams.from_grads(grads, split_model))
    assert_close(dict(grouped_model.named_parameters()), dict(split_model.named_parameters()),
                 atol=1e-12, rtol=0)  # fmt: skip

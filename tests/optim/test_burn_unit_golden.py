"""Burn's own optimizer unit tests, rebuilt with burnish: the numbers in
tests/golden/burn_unit_tests.py (Muon, Adan, L-BFGS, AMSGrad, cautious weight decay).

Each test is Burn's, ported name by name: Burn's `Linear` is `nn.Linear` (its weight
transposed: Burn's is `[d_input, d_output]`), `linear.forward(x).backward()` is
`bn.backward(linear(x))`. An earlier version kept Burn's layout in a custom module and checked
Muon's `adjustment_ratio` on raw shapes only, so the layout of `nn.Linear` never reached a
test and Muon's ratio for `nn.Linear(8, 4)` (1.0 instead of Burn's 1.414) went unnoticed.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import (
    AdaGradConfig,
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    AdjustLrFn,
    GradientsParams,
    LBFGSConfig,
    LineSearchFn,
    MuonConfig,
    RmsPropConfig,
    WeightDecayConfig,
)
from burnish.optim.line_search import cubic_interpolate, strong_wolfe

from tests.golden import burn_unit_tests as burn
from tests.helpers import assert_close

F32, F64 = torch.float32, torch.float64


def given_linear_layer(weight, bias, dtype=F32) -> nn.Linear:
    """Burn's test helper `given_linear_layer(weight, bias)`: `Linear { weight, bias }`.

    Burn's `Linear` holds `weight` as `[d_input, d_output]`, PyTorch's as `[d_output,
    d_input]`: the same layer (`LinearConfig::new(d_input, d_output)` <->
    `nn.Linear(d_input, d_output)`) holds Burn's matrix transposed. The golden numbers are in
    Burn's layout, so the tests compare `linear.weight.T` with them.
    """
    weight = torch.tensor(weight, dtype=dtype)
    d_input, d_output = weight.shape
    linear = nn.Linear(d_input, d_output, bias=bias is not None, dtype=dtype)
    with torch.no_grad():
        linear.weight.copy_(weight.T)
        if bias is not None:
            linear.bias.copy_(torch.tensor(bias, dtype=dtype))
    return linear


def _step(optim, linear, x, lr=burn.LEARNING_RATE):
    """Burn's `linear.forward(x).backward()`: the gradient of the output's sum."""
    loss = linear(torch.tensor(x, dtype=F32)).sum()
    return optim.step(lr, linear, GradientsParams.from_grads(bn.backward(loss), linear))


def _fifty_steps(optim):
    linear = given_linear_layer(burn.WEIGHT, burn.BIAS)
    for i in range(1, 51):
        linear = _step(optim, linear, (torch.ones(2, 6) * (i * 0.1)).tolist())
    return linear


def _assert_layer(linear, expected, atol):
    """Burn's `assert_approx_eq` of `weight` (in Burn's `[d_input, d_output]`) and `bias`."""
    weight = linear.weight.detach().T
    assert_close(weight, torch.tensor(expected["weight"], dtype=weight.dtype), atol=atol, rtol=0)
    assert_close(linear.bias.detach(), torch.tensor(expected["bias"]), atol=atol, rtol=0)


def _two_steps(optim, weight=None, bias=None):
    """The with-numbers tests' body: `given_linear_layer`, then steps on `x_1` and `x_2`."""
    linear = given_linear_layer(weight or burn.WEIGHT, bias or burn.BIAS)
    linear = _step(optim, linear, burn.X_1)
    return _step(optim, linear, burn.X_2)


def test_adam_optimizer_with_numbers():
    """adam.rs `test_adam_optimizer_with_numbers`, within Burn's own 1e-2. Burn's weight
    numbers are 2.7e-3 from Burn's own formula: they are the result for a layer holding the
    matrix as PyTorch's `[d_output, d_input]` weight (the gradient transposed), which they
    match within 1e-6, as checked second."""
    config = AdamConfig(beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                        weight_decay=WeightDecayConfig(0.5))  # fmt: skip
    _assert_layer(_two_steps(config.init()), burn.ADAM, atol=1e-2)
    torch_layout = given_linear_layer(torch.tensor(burn.WEIGHT).T.tolist(), burn.BIAS)
    optim = config.init()
    torch_layout = _step(optim, _step(optim, torch_layout, burn.X_1), burn.X_2)
    expected = torch.tensor(burn.ADAM["weight"])
    assert_close(torch_layout.weight.detach(), expected, atol=1e-6, rtol=0)
    assert (torch_layout.weight.detach().T - expected).abs().max() > 1e-3  # not Burn's layout


def test_adamw_optimizer_with_numbers():
    """adamw.rs `test_adamw_optimizer_with_numbers` (Burn's tolerance 1e-2, which its numbers
    need: they were printed at another point than this config, see the cautious test)."""
    config = AdamWConfig(beta_1=0.9, beta_2=0.999, epsilon=1e-8, weight_decay=0.5)
    expected = [row[:] for row in burn.ADAMW_CAUTIOUS["weight"]]
    expected[5][5] = burn.ADAMW_PLAIN_LAST
    _assert_layer(
        _two_steps(config.init()), {"weight": expected, "bias": burn.ADAMW_CAUTIOUS["bias"]}, 1e-2
    )


@pytest.mark.parametrize(
    "config",
    [
        AdamConfig(epsilon=1e-8, weight_decay=WeightDecayConfig(0.5)),
        AdamWConfig(epsilon=1e-8, weight_decay=0.5),
    ],
    ids=["adam", "adamw"],
)
def test_adam_optimizer_no_nan(config):
    """adam.rs / adamw.rs `test_adam_optimizer_no_nan`: the same input twice."""
    optim = config.init()
    linear = _step(optim, given_linear_layer(burn.WEIGHT, burn.BIAS), burn.X_2)
    linear = _step(optim, linear, burn.X_2)
    assert not torch.isnan(linear.weight.T[0, 0])
    assert torch.isfinite(linear.weight).all()


def test_adagrad_optimizer_with_numbers():
    """adagrad.rs `test_adagrad_optimizer_with_numbers`, within Burn's 1e-6."""
    config = AdaGradConfig(epsilon=1e-8, lr_decay=0.5)
    _assert_layer(_two_steps(config.init()), burn.ADAGRAD, atol=1e-6)


def _rmsprop():
    return RmsPropConfig(alpha=0.99, epsilon=1e-8, weight_decay=WeightDecayConfig(0.05),
                         momentum=0.9, centered=False).init()  # fmt: skip


def test_rmsprop_optimizer_with_numbers_basic():
    """rmsprop.rs `test_rmsprop_optimizer_with_numbers_basic`, within Burn's 1e-6."""
    linear = _two_steps(_rmsprop(), burn.RMSPROP_BASIC_WEIGHT, burn.RMSPROP_BASIC_BIAS)
    _assert_layer(linear, burn.RMSPROP_BASIC, atol=1e-6)


def test_rmsprop_optimizer_with_numbers():
    """rmsprop.rs `test_rmsprop_optimizer_with_numbers`, within Burn's 1e-6."""
    _assert_layer(_two_steps(_rmsprop()), burn.RMSPROP, atol=1e-6)


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
    linear = _step(optim, given_linear_layer(burn.WEIGHT, burn.BIAS), burn.X_1)
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
    optim, linear = config.init(), given_linear_layer(burn.WEIGHT, burn.BIAS, F64)
    for x in inputs:
        loss = linear(torch.tensor(x, dtype=F64)).sum()
        grads = GradientsParams.from_grads(bn.backward(loss), linear)
        linear = optim.step(burn.LEARNING_RATE, linear, grads)
    expected = _cautious_adamw_formula(burn.WEIGHT, burn.BIAS, inputs, 0.01, 0.5, cautious)
    assert_close([linear.weight.detach().T, linear.bias.detach()], expected, atol=1e-12, rtol=0)
    plain = _cautious_adamw_formula(burn.WEIGHT, burn.BIAS, inputs, 0.01, 0.5, not cautious)
    assert (plain[0] - expected[0]).abs().max() > 1e-4  # the mask was active


def test_adan_with_numbers():
    config = AdanConfig(beta_1=0.98, beta_2=0.92, beta_3=0.99, epsilon=1e-8, weight_decay=0.02)
    optim = config.init()
    linear = _step(optim, given_linear_layer(burn.WEIGHT, burn.BIAS), burn.X_1)
    linear = _step(optim, linear, burn.X_2)
    _assert_layer(linear, burn.ADAN, atol=1e-5)


def test_adan_no_nan_on_a_repeated_input():
    """adan.rs `test_adan_optimizer_no_nan`: the same input twice (a zero gradient difference)."""
    optim = AdanConfig(epsilon=1e-8, weight_decay=0.02).init()
    linear = _step(optim, given_linear_layer(burn.WEIGHT, burn.BIAS), burn.X_2)
    linear = _step(optim, linear, burn.X_2)
    assert torch.isfinite(linear.weight).all()


# -- Muon ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("adjust", "cases"),
    [
        (AdjustLrFn.Original, burn.MUON_ADJUST_ORIGINAL),
        (AdjustLrFn.MatchRmsAdamW, burn.MUON_ADJUST_MATCH_RMS_ADAMW),
    ],
)
def test_muon_adjust_lr_fn(adjust, cases):
    for shape, ratio in cases:
        assert adjust.adjustment_ratio(shape) == pytest.approx(ratio, abs=1e-8)
    assert adjust.adjustment_ratio([512]) == 1.0  # below two dimensions: unchanged


@pytest.mark.parametrize(
    ("d_input", "d_output"), [(8, 4), (4, 8), (1024, 512), (512, 1024), (6, 6)]
)
def test_muon_adjust_lr_fn_of_a_layer_is_burns(d_input, d_output):
    """Burn's `LinearConfig::new(d_input, d_output)` has weight `[d_input, d_output]`, so its
    ratio is `adjustment_ratio([d_input, d_output])`; `nn.Linear(d_input, d_output)` (weight
    `[d_output, d_input]`) must get the same: `nn.Linear(8, 4)` -> sqrt(2) with `Original`."""
    weight = nn.Linear(d_input, d_output, bias=False).weight
    for adjust in AdjustLrFn:
        burns = adjust.adjustment_ratio([d_input, d_output])
        assert adjust.ratio_for(weight.shape) == pytest.approx(burns, abs=1e-12)
    assert AdjustLrFn.Original.ratio_for(nn.Linear(8, 4).weight.shape) == pytest.approx(2**0.5)


@pytest.mark.parametrize("adjust", list(AdjustLrFn))
@pytest.mark.parametrize(("d_input", "d_output"), [(8, 4), (4, 8)])
def test_muon_step_scales_the_update_by_burns_ratio(adjust, d_input, d_output):
    """A Burn-idiom step (`LinearConfig::new(8, 4).with_bias(false)`, `linear.forward(x)
    .backward()`, `optimizer.step(0.01, linear, grads)`): the first update is
    `lr * ratio * NS(g + 0.95 v)` with `v = g`, the ratio Burn's for the layer."""
    bn.seed(0)
    linear = nn.Linear(d_input, d_output, bias=False)
    before = linear.weight.detach().clone()
    x = torch.rand(2, d_input)
    grads = GradientsParams.from_grads(bn.backward(linear(x)), linear)
    gradient = grads.get("weight").clone()
    optimizer = MuonConfig(adjust_lr_fn=adjust).init()
    linear = optimizer.step(0.01, linear, grads)
    orthogonal = _orthogonalize((gradient * 1.95).tolist())
    ratio = adjust.adjustment_ratio([d_input, d_output])  # Burn's weight shape
    assert_close(before - linear.weight.detach(), 0.01 * ratio * orthogonal, atol=1e-6, rtol=1e-4)


def _orthogonalize(matrix):
    return MuonConfig().init()._newton_schulz(torch.tensor([matrix], dtype=F32))[0]


def test_muon_newton_schulz_orthogonalization():
    orthogonal = _orthogonalize(burn.MUON_NS_MATRIX)
    product = orthogonal @ orthogonal.T
    assert abs(product[0, 0] - 1.0) < 0.1 and abs(product[1, 1] - 1.0) < 0.1


def test_muon_tall_matrix_is_transposed_and_back():
    tall = torch.tensor(burn.MUON_TALL)
    orthogonal = _orthogonalize(burn.MUON_TALL)
    assert orthogonal.shape == (8, 4) and not torch.equal(orthogonal, tall)
    # Transposed inside: the columns (the short side) come out near-orthonormal.
    assert_close(orthogonal.T @ orthogonal, torch.eye(4), atol=0.35, rtol=0)
    wide = _orthogonalize(torch.tensor(burn.MUON_TALL).T.tolist())
    assert wide.shape == (4, 8)
    assert_close(wide, orthogonal.T, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("penalty", [None, 0.01])
def test_muon_zero_gradient(penalty):
    """muon.rs `test_zero_gradient`: no NaN; unchanged, or shrunk by the decay alone."""
    decay = None if penalty is None else WeightDecayConfig(penalty)
    optim = MuonConfig(weight_decay=decay).init()
    linear = given_linear_layer(burn.MUON_SQUARE, None)
    grads = GradientsParams()
    grads.register(linear.weight, torch.zeros(4, 4), name="weight")
    linear = optim.step(0.01, linear, grads)
    before = torch.tensor(burn.MUON_SQUARE)
    assert torch.isfinite(linear.weight).all()
    if penalty is None:
        assert_close(linear.weight.detach().T, before, atol=1e-6, rtol=0)
    else:
        assert_close(linear.weight.detach().T, before * (1 - 0.01 * penalty), atol=1e-7, rtol=0)


def test_muon_with_weight_decay_reduces_the_weights():
    """muon.rs `test_muon_with_weight_decay`."""
    linear = given_linear_layer([[1.0] * 4] * 4, None)
    optim = MuonConfig(weight_decay=WeightDecayConfig(0.01)).init()
    linear = _step(optim, linear, [[0.5] * 4] * 2)
    assert (linear.weight < 1.0).all()


def test_muon_refuses_a_parameter_that_is_not_a_matrix():
    """muon.rs `test_1d_tensor_panics`: burnish raises, naming the parameter and the fix."""
    linear = given_linear_layer(burn.WEIGHT, burn.BIAS)
    loss = linear(torch.tensor(burn.X_1)).sum()
    grads = GradientsParams.from_grads(bn.backward(loss), linear)
    with pytest.raises(ValueError, match=r"matrices only.*'bias' with shape \[6\].*AdamW"):
        MuonConfig().init().step(0.01, linear, grads)


# -- L-BFGS ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "bounds", "expected"), burn.CUBIC_INTERPOLATE)
def test_cubic_interpolate(args, bounds, expected):
    assert cubic_interpolate(*args, bounds) == pytest.approx(expected, abs=1e-8)


def test_strong_wolfe_direct_comparison():
    """lbfgs.rs `test_strong_wolfe_direct_comparison`, in float32 as Burn's tensors are."""
    golden = burn.STRONG_WOLFE

    def objective(x, t, d):
        x = x + d * t
        x2 = x * x
        return float((x2 * x2 - x2 * 2.0 + x).sum()), x2 * x * 4.0 - x * 4.0 + 1.0

    x, d = torch.tensor([golden["x"]]), torch.tensor([golden["d"]])
    f, g = objective(x, 0.0, d)
    gtd = float(g.dot(d))
    assert f == pytest.approx(golden["f_init"], abs=1e-6)
    assert gtd == pytest.approx(golden["gtd_init"], abs=1e-6)
    f_final, g_final, t_final, evals = strong_wolfe(objective, x, golden["t"], d, f, g, gtd,
                                                    1e-4, 0.9, 1e-9, 10)  # fmt: skip
    assert f_final == pytest.approx(golden["f_final"], abs=1e-6)
    assert float(g_final) == pytest.approx(golden["g_final"], abs=1e-5)
    assert t_final == pytest.approx(golden["t_final"], abs=1e-6)
    assert evals == golden["evals"]


@pytest.mark.parametrize(
    ("line_search", "expected"),
    [(LineSearchFn.StrongWolfe, burn.LBFGS_STRONG_WOLFE), (None, burn.LBFGS_NO_LINE_SEARCH)],
    ids=["strong-wolfe", "no-line-search"],
)
def test_lbfgs_one_step(line_search, expected):
    """lbfgs.rs `test_lbfgs_(no_)strong_wolfe_comparison` (float32, as Burn's tensors)."""
    linear = nn.Linear(1, 1)
    with torch.no_grad():
        linear.weight.fill_(0.5)
        linear.bias.fill_(0.1)
    x, y = torch.tensor(burn.LBFGS_X), torch.tensor(burn.LBFGS_Y)

    def closure(model):
        loss = ((model(x) - y) ** 2).sum()  # Burn's MseLoss with Reduction::Sum
        return loss, GradientsParams.from_grads(bn.backward(loss), model)

    assert float(closure(linear)[0].detach()) == pytest.approx(burn.LBFGS_INITIAL_LOSS, abs=1e-5)
    optim = LBFGSConfig(line_search_fn=line_search).init()
    linear, loss = optim.step(0.001, linear, closure)
    assert loss == pytest.approx(expected["loss"], abs=1e-5)
    assert linear.weight.item() == pytest.approx(expected["weight"], abs=1e-5)
    assert linear.bias.item() == pytest.approx(expected["bias"], abs=1e-5)

"""Burn main's optimizer API, in Burn's own tests ported name by name
(`crates/burn-optim/src/optim/{sgd,adam}.rs`, `module/module_optimizer.rs`,
`burn-core/src/module/param/group.rs`): `with_grad_clipping` / `grad_clipping` /
`has_gradient_clipping`, `save` / `load`, `step_multi`, `ParamGroup.from_ids`."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.optim import (
    AdamConfig,
    GradientClippingConfig,
    GradientsParams,
    ModuleOptimizer,
    MomentumConfig,
    MultiGradientsParams,
    ParamGroup,
    SgdConfig,
    WeightDecayConfig,
)

from tests.helpers import assert_close

LEARNING_RATE = 0.01


class TwoLayerModel(nn.Module):
    """module_optimizer.rs `TwoLayerModel { layer_a: Linear, layer_b: Linear }`."""

    def __init__(self) -> None:
        super().__init__()
        self.layer_a = nn.Linear(4, 4)
        self.layer_b = nn.Linear(4, 4)


def make_model(seed: int = 0) -> TwoLayerModel:
    bn.seed(seed)
    return TwoLayerModel()


def make_grads(model: TwoLayerModel, x: torch.Tensor) -> GradientsParams:
    out = model.layer_a(x) + model.layer_b(x)
    return GradientsParams.from_grads(bn.backward(out.mean()), model)


def _random(*shape, low=0.0, high=1.0, seed=0):
    """Burn's `Tensor::random(shape, Distribution::Uniform(low, high))`, seeded."""
    gen = torch.Generator().manual_seed(seed)
    return torch.rand(*shape, generator=gen) * (high - low) + low


def sgd_with_all():
    """sgd.rs `sgd_with_all()`."""
    return SgdConfig(
        weight_decay=WeightDecayConfig(penalty=0.05),
        momentum=MomentumConfig(momentum=0.9, dampening=0.1, nesterov=True),
        gradient_clipping=None,
    ).init()


def _assert_same(a: nn.Module, b: nn.Module, atol: float = 1e-6) -> None:
    assert_close(dict(a.named_parameters()), dict(b.named_parameters()), atol=atol, rtol=0)


# -- gradient clipping -----------------------------------------------------------------------


def test_can_attach_gradient_clipping():
    """sgd.rs `can_attach_gradient_clipping`."""
    optim = sgd_with_all().with_grad_clipping(GradientClippingConfig.value(0.5))
    assert optim.has_gradient_clipping()
    assert not sgd_with_all().has_gradient_clipping()
    assert optim.grad_clipping == GradientClippingConfig.value(0.5)


def test_module_optimizer_grad_clipping_is_the_first_groups():
    """`ModuleOptimizer::grad_clipping()` / `with_grad_clipping`: the first optimizer's."""
    optim = ModuleOptimizer(SgdConfig().init()).with_group(
        ParamGroup.from_predicate("layer_a"), SgdConfig().init(), GradientClippingConfig.norm(1.0)
    )
    assert optim.grad_clipping is None and optim.has_gradient_clipping()
    optim = optim.with_grad_clipping(GradientClippingConfig.value(0.5))
    assert optim.grad_clipping == GradientClippingConfig.value(0.5)


@pytest.mark.parametrize("how", ["with_grad_clipping", "group"])
def test_group_grad_clipping_applies_only_to_matching_params(how):
    """module_optimizer.rs `group_grad_clipping_applies_only_to_matching_params`; and the
    same bound for every parameter after `with_grad_clipping` on the base group."""
    model = make_model()
    threshold = 0.01
    bound = LEARNING_RATE * threshold
    clipping = GradientClippingConfig.value(threshold)
    if how == "group":
        optim = ModuleOptimizer(SgdConfig().init()).with_group(
            ParamGroup.from_predicate("layer_a"), SgdConfig().init(), clipping
        )
    else:
        optim = SgdConfig().init().with_grad_clipping(clipping)
    # Large inputs produce gradients that clearly exceed the clipping threshold.
    x = _random(2, 4, low=100.0, high=200.0)
    weight_a_before = model.layer_a.weight.detach().clone()
    weight_b_before = model.layer_b.weight.detach().clone()
    model = optim.step(LEARNING_RATE, model, make_grads(model, x))
    diff_a = weight_a_before - model.layer_a.weight.detach()
    diff_b = weight_b_before - model.layer_b.weight.detach()
    eps = 1e-6
    assert (diff_a.abs() <= bound + eps).all()
    if how == "group":
        assert (diff_b.abs() > bound + eps).any(), "layer_b's default optimizer: not clipped"
    else:
        assert (diff_b.abs() <= bound + eps).all()


def test_with_grad_clipping_refuses_a_number():
    with pytest.raises(TypeError, match=r"GradientClippingConfig.*Received: 0.5"):
        SgdConfig().init().with_grad_clipping(0.5)  # type: ignore[arg-type]


# -- save / load -----------------------------------------------------------------------------


def create_adam():
    return AdamConfig().init()


def test_adam_optimizer_save_load_state(tmp_path):
    """adam.rs `test_adam_optimizer_save_load_state`, on disk."""
    linear = nn.Linear(6, 6)
    x = _random(2, 6)
    optimizer = create_adam()
    grads = GradientsParams.from_grads(bn.backward(linear(x)), linear)
    _linear = optimizer.step(LEARNING_RATE, linear, grads)

    path = optimizer.save(tmp_path / "test_optim_adam")
    assert path.is_file() and path.stat().st_size > 0

    state_optim_before = optimizer.to_record()
    optimizer = create_adam().load(tmp_path / "test_optim_adam")
    state_optim_after = optimizer.to_record()
    assert len(state_optim_before["state"]) == len(state_optim_after["state"]) == 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_adam_state_survives_a_file_round_trip(tmp_path, dtype):
    """adam.rs `test_adam_state_survives_burnpack_round_trip` (AMSGrad), through `save` /
    `load`: one more step on each optimizer gives the same parameters, in every dtype."""
    bn.seed(1)
    linear = nn.Linear(6, 6, dtype=dtype)
    optimizer = AdamConfig(amsgrad=True).init()
    for i in range(1, 4):
        x = torch.ones(2, 6, dtype=dtype) * (i * 0.1)
        grads = GradientsParams.from_grads(bn.backward(linear(x)), linear)
        linear = optimizer.step(LEARNING_RATE, linear, grads)

    optimizer.save(tmp_path / "adam")
    reloaded = AdamConfig(amsgrad=True).init().load(tmp_path / "adam.mpk")

    copy = nn.Linear(6, 6, dtype=dtype)
    copy.load_state_dict(linear.state_dict())
    x = torch.ones(2, 6, dtype=dtype) * 0.4
    from_original = optimizer.step(
        LEARNING_RATE, linear, GradientsParams.from_grads(bn.backward(linear(x)), linear)
    )
    from_reloaded = reloaded.step(
        LEARNING_RATE, copy, GradientsParams.from_grads(bn.backward(copy(x)), copy)
    )
    assert torch.equal(from_original.weight, from_reloaded.weight)
    assert torch.equal(from_original.bias, from_reloaded.bias)


def test_group_optimizer_routes_correctly_after_a_file_round_trip(tmp_path):
    """module_optimizer.rs `group_optimizer_routes_correctly_after_record_round_trip`."""
    model = make_model()

    def make_optim():
        return sgd_with_all().with_group(
            ParamGroup.from_predicate("layer_a"), AdamConfig().init(), None
        )

    optim = make_optim()
    for step in range(3):
        model = optim.step(LEARNING_RATE, model, make_grads(model, _random(2, 4, seed=step)))
    optim.save(tmp_path / "optim")
    reloaded = make_optim().load(tmp_path / "optim")

    copy = make_model()
    copy.load_state_dict(model.state_dict())
    x = _random(2, 4, seed=9)
    from_orig = optim.step(LEARNING_RATE, model, make_grads(model, x))
    from_reload = reloaded.step(LEARNING_RATE, copy, make_grads(copy, x))
    _assert_same(from_orig, from_reload)


def test_load_names_a_missing_file_and_a_foreign_record(tmp_path):
    with pytest.raises(RecordError, match=r"missing\.mpk"):
        create_adam().load(tmp_path / "missing")
    linear = nn.Linear(2, 2)
    sgd = sgd_with_all()
    sgd.step(0.1, linear, GradientsParams.from_grads(bn.backward(linear(torch.ones(1, 2))), linear))
    sgd.save(tmp_path / "sgd")
    with pytest.raises(RecordError, match=r"saved by optimizer 'Sgd'.*cannot be loaded into Adam"):
        create_adam().load(tmp_path / "sgd")
    with pytest.raises(TypeError, match=r"`recorder` must be a burnish recorder.*Received: 'mpk'"):
        sgd.save(tmp_path / "sgd", recorder="mpk")


# -- step_multi --------------------------------------------------------------------------------


@pytest.mark.parametrize("grouped", [False, True])
def test_step_multi_sums_the_gradients_of_every_source(grouped):
    """`optim.step_multi(lr, model, grads)` with a `MultiGradientsParams` of two sources (as
    Burn's multi-device training builds it): the step of the summed gradients."""

    def make_optim():
        optim = ModuleOptimizer(AdamConfig().init())
        if grouped:
            optim = optim.with_group(ParamGroup.from_predicate("layer_b"), SgdConfig().init())
        return optim

    x_1, x_2 = _random(2, 4, seed=1), _random(2, 4, seed=2)
    model, optim = make_model(), make_optim()
    device = torch.device("cpu")
    grads = MultiGradientsParams()
    grads.grads.append((make_grads(model, x_1), device))
    grads.grads.append((make_grads(model, x_2), device))
    model = optim.step_multi(LEARNING_RATE, model, grads)

    reference, reference_optim = make_model(), make_optim()
    summed = (reference.layer_a(x_1) + reference.layer_b(x_1)).mean() + (
        reference.layer_a(x_2) + reference.layer_b(x_2)
    ).mean()
    grads_sum = GradientsParams.from_grads(bn.backward(summed), reference)
    reference = reference_optim.step(LEARNING_RATE, reference, grads_sum)
    _assert_same(model, reference)
    assert all(source.is_empty() for source, _ in grads.grads)  # consumed


def test_step_multi_on_a_plain_optimizer_and_its_error():
    model, optim = make_model(), SgdConfig().init()
    before = model.layer_a.weight.detach().clone()
    grads = MultiGradientsParams([(make_grads(model, _random(2, 4)), "cpu")])
    model = optim.step_multi(LEARNING_RATE, model, grads)
    assert not torch.equal(model.layer_a.weight, before)
    with pytest.raises(TypeError, match=r"takes a MultiGradientsParams.*Received: GradientsParams"):
        optim.step_multi(LEARNING_RATE, model, make_grads(model, _random(2, 4)))


# -- ParamGroup.from_ids ---------------------------------------------------------------------


def test_explicit_matches_only_selected_ids():
    """group.rs `explicit_matches_only_selected_ids`: a group of one parameter's id."""
    model = make_model()
    group = ParamGroup.from_ids([model.layer_a.weight])
    optim = ModuleOptimizer(SgdConfig().init()).with_group(group, AdamConfig().init())
    assert optim.routes(model) == {
        "layer_a.weight": 1,
        "layer_a.bias": 0,
        "layer_b.weight": 0,
        "layer_b.bias": 0,
    }
    model = optim.step(LEARNING_RATE, model, make_grads(model, _random(2, 4)))
    assert sorted(optim.optimizers[1][1].to_record()["state"]) == ["layer_a.weight"]


def test_exclude_removes_matching_ids_from_a_group():
    """group.rs `exclude_removes_matching_ids_from_a_group`, and paths as ids."""
    model = make_model()
    exclude_group = ParamGroup.from_ids([model.layer_a.bias])
    group = ParamGroup.from_ids([model.layer_a.weight, model.layer_a.bias]).exclude(exclude_group)
    optim = ModuleOptimizer(SgdConfig()).with_group(group, SgdConfig())
    assert [name for name, index in optim.routes(model).items() if index] == ["layer_a.weight"]
    # A path is an id too; `fuse` drops the excludes, as Burn's.
    fused = group.fuse(ParamGroup.from_ids(["layer_b.bias"]))
    optim = ModuleOptimizer(SgdConfig()).with_group(fused, SgdConfig())
    assert [name for name, index in optim.routes(model).items() if index] == [
        "layer_a.weight",
        "layer_a.bias",
        "layer_b.bias",
    ]


def test_ids_from_module_collects_all_param_ids():
    """group.rs `ids_from_module_collects_all_param_ids`, as a group of a ModuleOptimizer."""
    model = make_model()
    group = ParamGroup.ids_from_module(model.layer_b)
    optim = ModuleOptimizer(SgdConfig()).with_group(group, AdamConfig())
    assert [name for name, index in optim.routes(model).items() if index] == [
        "layer_b.weight",
        "layer_b.bias",
    ]
    model = optim.step(LEARNING_RATE, model, make_grads(model, _random(2, 4)))
    assert sorted(optim.optimizers[1][1].to_record()["state"]) == ["layer_b.bias", "layer_b.weight"]


def test_with_group_from_ids_resets_the_state_of_its_parameters():
    """module_optimizer.rs `with_group_clears_state_for_matching_params`, with ids."""
    model = make_model()
    optim = ModuleOptimizer(AdamConfig().init())
    for step in range(2):
        model = optim.step(LEARNING_RATE, model, make_grads(model, _random(2, 4, seed=step)))
    optim = optim.with_group(
        ParamGroup.from_ids([model.layer_a.weight, model.layer_a.bias]), SgdConfig().init()
    )
    assert sorted(optim.optimizers[0][1].to_record()["state"]) == ["layer_b.bias", "layer_b.weight"]


@pytest.mark.parametrize(
    ("ids", "match"),
    [
        ("layer_a.weight", r"`ids` must be a list of parameter ids.*Received: 'layer_a.weight'"),
        ([3], r"a parameter tensor or its path.*Received: 3 \(int\)"),
    ],
)
def test_from_ids_refuses_what_is_not_an_id(ids, match):
    with pytest.raises(TypeError, match=match):
        ParamGroup.from_ids(ids)

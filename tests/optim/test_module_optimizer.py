"""`ModuleOptimizer.with_group` and `ModuleLrScheduler.with_group` (Burn main, #5121).

The headline: AdamW with weight decay on the matrices and none on norms, biases and
embeddings, the head at its own learning rate, equals the same split done by hand with
`GradientsParams.from_params` and two optimizers, each stepped at two rates.
"""

from __future__ import annotations

import pickle

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.lr_scheduler import (
    LinearLrSchedulerConfig,
    ModuleLearningRate,
    ModuleLrScheduler,
)
from burnish.optim import (
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    ModuleOptimizer,
    NonFiniteGuard,
    ParamGroup,
    SgdConfig,
)

from tests.helpers import assert_close

STEPS = 60
NO_DECAY = ParamGroup.from_regex(r"(bias|norm\.weight|embedding\.weight)$")
HEAD = ParamGroup.from_predicate("head.")
DECAYED = ["block.linear.weight", "head.weight"]


class TinyLm(nn.Module):
    """An embedding, a block (linear + layer norm) and a head."""

    def __init__(self) -> None:
        super().__init__()
        bn.seed(5)
        self.embedding = nn.Embedding(11, 8)
        self.block = nn.ModuleDict({"linear": nn.Linear(8, 8), "norm": nn.LayerNorm(8)})
        self.head = nn.Linear(8, 11)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embedding(tokens)
        x = x + torch.tanh(self.block["linear"](self.block["norm"](x)))
        return self.head(x)


def _loss(model: nn.Module, step: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(step)
    tokens = torch.randint(0, 11, (4, 6), generator=gen)
    logits = model(tokens[:, :-1])
    return nn.functional.cross_entropy(logits.reshape(-1, 11), tokens[:, 1:].reshape(-1))


def _schedules() -> tuple[LinearLrSchedulerConfig, LinearLrSchedulerConfig]:
    return LinearLrSchedulerConfig(1e-2, 1e-3, STEPS), LinearLrSchedulerConfig(5e-2, 5e-3, STEPS)


def _grouped() -> tuple[ModuleOptimizer, ModuleLrScheduler]:
    optim = ModuleOptimizer(AdamWConfig(weight_decay=0.1)).with_group(
        NO_DECAY, AdamWConfig(weight_decay=0.0)
    )
    body, head = _schedules()
    return optim, ModuleLrScheduler(body).with_group(HEAD, head)


def _train_grouped(model, optim, scheduler, steps=range(1, STEPS + 1)):
    for step in steps:
        lr = scheduler.step()
        grads = GradientsParams.from_grads(bn.backward(_loss(model, step)), model)
        model = optim.step(lr, model, grads)
        assert grads.is_empty()
    return model


def test_adamw_no_decay_split_and_head_lr_equal_the_split_by_hand():
    model, (optim, scheduler) = TinyLm(), _grouped()
    model = _train_grouped(model, optim, scheduler)

    hand = TinyLm()
    decay, plain = AdamWConfig(weight_decay=0.1).init(), AdamWConfig(weight_decay=0.0).init()
    body, head = (config.init() for config in _schedules())
    split = {  # (optimizer, rate) -> parameters, chosen by hand
        ("decay", "body"): ["block.linear.weight"],
        ("decay", "head"): ["head.weight"],
        ("plain", "body"): [
            "embedding.weight",
            "block.linear.bias",
            "block.norm.weight",
            "block.norm.bias",
        ],
        ("plain", "head"): ["head.bias"],
    }
    for step in range(1, STEPS + 1):
        rates = {"body": body.step(), "head": head.step()}
        grads = bn.backward(_loss(hand, step))
        for (which, rate), names in split.items():
            part = GradientsParams.from_params(grads, hand, names)
            hand = (decay if which == "decay" else plain).step(rates[rate], hand, part)

    assert_close(dict(model.named_parameters()), dict(hand.named_parameters()), 1e-7, 1e-7)
    record = optim.to_record()
    assert record["group_of"] == {
        name: 0 if name in DECAYED else 1 for name, _ in model.named_parameters()
    }
    expected = {**decay.to_record()["state"], **plain.to_record()["state"]}
    assert_close(record["state"], expected, 1e-7, 1e-7)
    # The split matters: decay on every parameter (one group) ends elsewhere.
    single = ModuleOptimizer(AdamWConfig(weight_decay=0.1))
    everything = _train_grouped(TinyLm(), single, _grouped()[1])
    assert not torch.allclose(everything.embedding.weight, model.embedding.weight, atol=1e-5)


def test_routes_follow_the_last_matching_group_as_burn():
    model = TinyLm()
    optim = (
        ModuleOptimizer(SgdConfig())
        .with_group(ParamGroup.from_predicate("block"), AdamConfig())
        .with_group(ParamGroup.from_path("block.norm.bias"), AdamWConfig())
    )
    routes = optim.routes(model)
    assert routes["block.linear.weight"] == 1 and routes["block.norm.weight"] == 1
    assert routes["block.norm.bias"] == 2  # in both groups: the later one wins
    assert routes["head.weight"] == 0 and routes["embedding.weight"] == 0
    _train_grouped(model, optim, ModuleLrScheduler(1e-2), range(1, 3))
    kinds = {type(o).__name__: sorted(o.to_record()["state"]) for _, o in optim.optimizers}
    assert kinds["AdamW"] == ["block.norm.bias"]
    assert kinds["Adam"] == ["block.linear.bias", "block.linear.weight", "block.norm.weight"]
    assert kinds["Sgd"] == ["embedding.weight", "head.bias", "head.weight"]


def test_a_float_lr_steps_every_group_at_that_rate():
    model, optim = TinyLm(), _grouped()[0]
    hand, decay, plain = TinyLm(), AdamWConfig(weight_decay=0.1).init(), AdamWConfig(0).init()
    plain = AdamWConfig(weight_decay=0.0).init()
    for step in range(1, 4):
        model = optim.step(
            1e-2, model, GradientsParams.from_grads(bn.backward(_loss(model, step)), model)
        )
        grads = bn.backward(_loss(hand, step))
        hand = decay.step(1e-2, hand, GradientsParams.from_params(grads, hand, DECAYED))
        hand = plain.step(1e-2, hand, GradientsParams.from_grads(grads, hand))
    assert_close(dict(model.named_parameters()), dict(hand.named_parameters()), 1e-7, 1e-7)


def test_state_survives_a_record_round_trip_through_a_file(tmp_path):
    from burnish.record import DefaultRecorder

    model, (optim, scheduler) = TinyLm(), _grouped()
    model = _train_grouped(model, optim, scheduler, range(1, 6))
    recorder = DefaultRecorder()
    optim_file = recorder.record(optim.to_record(), tmp_path / "optim")
    scheduler_file = recorder.record(scheduler.to_record(), tmp_path / "scheduler")
    twin = TinyLm()
    twin.load_state_dict(model.state_dict())
    reloaded, reloaded_scheduler = _grouped()
    reloaded.load_record(recorder.load(optim_file))
    reloaded_scheduler.load_record(recorder.load(scheduler_file))

    model = _train_grouped(model, optim, scheduler, range(6, 12))
    twin = _train_grouped(twin, reloaded, reloaded_scheduler, range(6, 12))
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, twin.state_dict()[name]), name


def test_burn_group_routes_correctly_after_a_record_round_trip():
    """Burn's test: SGD for everything, Adam for layer_a, across to_record/load_record."""
    model = nn.ModuleDict({"layer_a": nn.Linear(4, 4), "layer_b": nn.Linear(4, 4)})

    def make():
        return ModuleOptimizer(SgdConfig()).with_group(
            ParamGroup.from_predicate("layer_a"), AdamConfig()
        )

    def step(model, optim):
        x = torch.rand(2, 4, generator=torch.Generator().manual_seed(1))
        loss = (model["layer_a"](x) + model["layer_b"](x)).mean()
        return optim.step(0.01, model, GradientsParams.from_grads(bn.backward(loss), model))

    optim = make()
    for _ in range(3):
        model = step(model, optim)
    reloaded = make().load_record(optim.to_record())
    twin = pickle.loads(pickle.dumps(model))
    model, twin = step(model, optim), step(twin, reloaded)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, twin.state_dict()[name]), name


def test_a_plain_optimizers_record_loads_when_its_kind_steps_the_parameters():
    model, plain = TinyLm(), AdamWConfig().init()
    model = plain.step(1e-2, model, GradientsParams.from_grads(bn.backward(_loss(model, 1)), model))
    grouped = ModuleOptimizer(AdamWConfig()).with_group(NO_DECAY, AdamWConfig(weight_decay=0.0))
    grouped.load_record(plain.to_record())
    assert set(grouped.to_record()["group_of"].values()) == {0, 1}
    with pytest.raises(RecordError, match=r"saved by AdamW, but here .* routes it to a Sgd"):
        ModuleOptimizer(AdamWConfig()).with_group(NO_DECAY, SgdConfig()).load_record(
            plain.to_record()
        )


def test_a_record_made_with_other_groups_is_refused():
    model, (optim, scheduler) = TinyLm(), _grouped()
    _train_grouped(model, optim, scheduler, range(1, 3))
    other = ModuleOptimizer(AdamWConfig()).with_group(NO_DECAY, AdamConfig())
    with pytest.raises(
        RecordError, match=r"'embedding.weight' was saved by AdamW.*a Adam \(group 1\)"
    ):
        other.load_record(optim.to_record())
    with pytest.raises(RecordError, match=r"Expected an optimizer record"):
        other.load_record({"nothing": 1})


def test_with_group_clears_the_earlier_state_of_its_parameters_as_burn():
    model, optim = TinyLm(), ModuleOptimizer(AdamConfig())
    _train_grouped(model, optim, ModuleLrScheduler(1e-3), range(1, 3))
    optim = optim.with_group(HEAD, SgdConfig())
    _train_grouped(model, optim, ModuleLrScheduler(1e-3), range(3, 4))
    record = optim.to_record()
    adam_state = sorted(name for name, k in record["group_of"].items() if k == 0)
    assert adam_state == [
        "block.linear.bias",
        "block.linear.weight",
        "block.norm.bias",
        "block.norm.weight",
        "embedding.weight",
    ]
    assert all(record["state"][name]["step"] == 3 for name in adam_state)


def test_group_grad_clipping_applies_only_to_its_parameters_as_burn():
    model = nn.ModuleDict({"layer_a": nn.Linear(4, 4), "layer_b": nn.Linear(4, 4)})
    lr, threshold = 0.01, 0.01
    optim = ModuleOptimizer(SgdConfig()).with_group(
        ParamGroup.from_predicate("layer_a"), SgdConfig(), GradientClippingConfig.value(threshold)
    )
    x = 100 + 100 * torch.rand(2, 4, generator=torch.Generator().manual_seed(0))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    loss = (model["layer_a"](x) + model["layer_b"](x)).mean()
    optim.step(lr, model, GradientsParams.from_grads(bn.backward(loss), model))
    moved = {name: (before[name] - p.detach()).abs().max() for name, p in model.named_parameters()}
    assert moved["layer_a.weight"] <= lr * threshold + 1e-7
    assert moved["layer_b.weight"] > lr * threshold + 1e-6


def test_global_norm_clipping_is_over_each_group_whatever_the_rates():
    """One group stepped at two rates clips its gradients together, once."""
    clip = GradientClippingConfig.global_norm(0.05)
    model, optim = TinyLm(), ModuleOptimizer(SgdConfig(gradient_clipping=clip))
    scheduler = ModuleLrScheduler(0.1).with_group(HEAD, 0.3)
    hand = TinyLm()
    model = _train_grouped(model, optim, scheduler, range(1, 3))
    for step in range(1, 3):
        grads = GradientsParams.from_grads(bn.backward(_loss(hand, step)), hand)
        names = grads.ids()
        clipped = dict(zip(names, clip.clip(list(grads.values()))))
        with torch.no_grad():
            for name, param in hand.named_parameters():
                param -= (0.3 if name.startswith("head.") else 0.1) * clipped[name]
    assert_close(dict(model.named_parameters()), dict(hand.named_parameters()), 1e-6, 1e-6)


def test_a_non_finite_gradient_skips_every_group():
    model, (optim, scheduler) = TinyLm(), _grouped()
    model = _train_grouped(model, optim, scheduler, range(1, 3))
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    state = optim.to_record()
    grads = GradientsParams.from_grads(bn.backward(_loss(model, 3)), model)
    grads.get("head.bias")[0] = float("nan")
    model, skipped = NonFiniteGuard().step(optim, scheduler.step(), model, grads)
    assert skipped.item() == 1.0
    for name, param in model.named_parameters():
        assert torch.equal(param, before[name]), name
    after = optim.to_record()
    assert all(after["state"][n]["step"] == state["state"][n]["step"] for n in state["state"])


# -- errors --------------------------------------------------------------------------------


def test_a_group_that_matches_nothing_is_refused_at_the_first_step():
    model = TinyLm()
    optim = ModuleOptimizer(AdamWConfig()).with_group(
        ParamGroup.from_predicate("haed"), SgdConfig()
    )
    grads = GradientsParams.from_grads(bn.backward(_loss(model, 1)), model)
    with pytest.raises(
        ValueError,
        match=r"ParamGroup.from_predicate\('haed'\) \(given to ModuleOptimizer.with_group\) "
        r"matches none of the 7 parameters of TinyLm: 'embedding.weight'.*Fix the path",
    ):
        optim.step(1e-3, model, grads)
    scheduler = ModuleLrScheduler(1e-3).with_group(ParamGroup.from_regex(r"^heads\."), 1e-2)
    grads = GradientsParams.from_grads(bn.backward(_loss(model, 1)), model)
    with pytest.raises(
        ValueError, match=r"from_regex\('\^heads\\\\.'\) \(given to ModuleLrScheduler"
    ):
        ModuleOptimizer(AdamWConfig()).step(scheduler.step(), model, grads)


def test_a_plain_optimizer_applies_a_rate_per_group():
    """Burn main's `init()` is a `ModuleOptimizer`: a plain burnish optimizer takes a
    `ModuleLearningRate` too, each group at its rate (it raised `TypeError` before)."""
    lr = ModuleLrScheduler(1e-3).with_group(HEAD, 1e-2).step()
    models = []
    for optim in (AdamWConfig().init(), ModuleOptimizer(AdamWConfig())):
        model = TinyLm()
        grads = GradientsParams.from_grads(bn.backward(_loss(model, 1)), model)
        models.append(optim.step(lr, model, grads))
    for name, tensor in models[1].state_dict().items():
        assert torch.equal(models[0].state_dict()[name], tensor), name
    # One group only: it is the one rate, as Burn's ModuleLearningRate::from(f64).
    model = models[0]
    grads = GradientsParams.from_grads(bn.backward(_loss(model, 1)), model)
    model = AdamWConfig().init().step(ModuleLrScheduler(1e-3).step(), model, grads)


def test_bad_groups_and_optimizers_are_refused():
    with pytest.raises(TypeError, match=r"`group` must be a ParamGroup.*Received: str"):
        ModuleOptimizer(SgdConfig()).with_group("head", SgdConfig())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Expected a burnish optimizer.*Received: 0.1"):
        ModuleOptimizer(0.1)
    shared = SgdConfig().init()
    with pytest.raises(TypeError, match=r"already steps another group"):
        ModuleOptimizer(shared).with_group(HEAD, shared)
    with pytest.raises(TypeError, match=r"cannot be one group's optimizer"):
        ModuleOptimizer(SgdConfig()).with_group(HEAD, ModuleOptimizer(SgdConfig()))
    with pytest.raises(TypeError, match=r"`group` must be a ParamGroup"):
        ModuleLrScheduler(1e-3).with_group(None, 1e-2)  # type: ignore[arg-type]


def test_optimizer_with_group_is_a_module_optimizer_as_burn_mains_init():
    optim = AdamWConfig().init().with_group(NO_DECAY, AdamWConfig(weight_decay=0.0))
    assert isinstance(optim, ModuleOptimizer) and len(optim.optimizers) == 2
    assert "ModuleOptimizer(ParamGroup.all(): AdamW" in repr(optim)


# -- the scheduler (Burn's module_lr_scheduler tests) --------------------------------------


def test_scheduler_default_group_is_the_base_schedule():
    constant = ModuleLrScheduler(0.01)
    assert [constant.step().base() for _ in range(3)] == [0.01] * 3
    linear = ModuleLrScheduler(LinearLrSchedulerConfig(0.9, 0.5, 4))
    assert [linear.step().base() for _ in range(6)] == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.5, 0.5])


def test_scheduler_groups_get_their_rates_and_advance_independently():
    scheduler = (
        ModuleLrScheduler(LinearLrSchedulerConfig(0.001, 0.0001, 4))
        .with_group(ParamGroup.from_path("a"), LinearLrSchedulerConfig(0.1, 0.01, 4))
        .with_group(ParamGroup.from_predicate("backbone"), LinearLrSchedulerConfig(0.5, 0.05, 4))
    )
    lr = scheduler.step()
    assert isinstance(lr, ModuleLearningRate) and float(lr) == 0.001
    assert lr.lr_from_param("a") == 0.1 and lr.lr_from_param("model.backbone.w") == 0.5
    assert lr.lr_from_param("model.head.w") == 0.001
    lr = scheduler.step()
    assert 0.01 < lr.lr_from_param("a") < 0.1 and 0.05 < lr.lr_from_param("backbone") < 0.5
    assert 0.0001 < lr.base() < 0.001


def test_scheduler_record_resumes_every_group_and_refuses_other_groups():
    def make():
        return ModuleLrScheduler(LinearLrSchedulerConfig(0.01, 0.001, 9)).with_group(
            HEAD, LinearLrSchedulerConfig(0.1, 0.01, 9)
        )

    original, truth = make(), make()
    for _ in range(5):
        original.step(), truth.step()
    restored = make().load_record(pickle.loads(pickle.dumps(original.to_record())))
    for _ in range(4):
        assert restored.step().lrs == truth.step().lrs
    with pytest.raises(RecordError, match=r"holds 2 schedulers .* this scheduler has 1"):
        ModuleLrScheduler(0.01).load_record(original.to_record())
    lr = truth.step()
    assert pickle.loads(pickle.dumps(lr)).lrs == lr.lrs

"""Burn main's scheduler API in Burn's own idiom, ported name by name (issue 39).

Sources (tracel-ai/burn at 2c06be35): crates/burn-optim/src/lr_scheduler/{base,composed,
sequential,module_lr_scheduler}.rs and their tests, crates/burn-train/tests/
module_lr_scheduler.rs, burn-book/src/building-blocks/{lr-scheduler,learner}.md,
examples/mnist/src/training.rs. Each test quotes the Rust it ports.
"""

from __future__ import annotations

import math

import pytest
import torch

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.errors import ConfigError
from burnish.lr_scheduler import (
    ComposedLrScheduler,
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    LrSchedulerConfig,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from burnish.optim import ParamGroup, SgdConfig
from burnish.train import Learner, SupervisedTraining
from burnish.train.metric import LossMetric

from tests.helpers import MnistBatcher, mnist
from tests.train.helpers import Mlp

EPSILON = 1e-10  # Burn's LOOSE_EPSILON / module_lr_scheduler's EPSILON


def check_lr_sequence(scheduler: LrScheduler, expected_lrs: list[float]) -> None:
    """Burn's `test_utils::check_lr_sequence`."""
    for i, expected in enumerate(expected_lrs):
        lr = scheduler.step()
        assert abs(lr - expected) < EPSILON, f"step {i}: {lr} != {expected}"


def check_save_load(make, save_at_step: int) -> None:
    """Burn's `test_utils::check_save_load`: a resumed scheduler goes on like the original."""
    scheduler, truth = make(), make()
    for _ in range(save_at_step):
        truth.step()
        scheduler.step()
    restored = make().load_record(scheduler.to_record())
    for _ in range(save_at_step):
        assert abs(restored.step() - truth.step()) < EPSILON


# -- sequential.rs ---------------------------------------------------------------------------


def config(milestones: list[int]) -> SequentialLrSchedulerConfig:
    # SequentialLrSchedulerConfig::new(vec![
    #     LinearLrSchedulerConfig::new(0.1, 0.3, 2).into(),
    #     ExponentialLrSchedulerConfig::new(0.5, 0.5).into(),
    #     CosineAnnealingLrSchedulerConfig::new(0.8, 2).into()], milestones)
    return SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ],
        milestones,
    )


def test_switches_schedulers_at_milestones():
    scheduler = config([2, 5]).build()
    check_lr_sequence(scheduler, [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0])
    check_lr_sequence(config([2, 5]).init(), [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0])


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SequentialLrSchedulerConfig([], []), "At least one scheduler is required"),
        (
            lambda: config([2]),
            "The number of milestones must be one less than the number of schedulers",
        ),
        (lambda: config([0, 2]), "Milestones must be greater than zero and strictly increasing"),
        (lambda: config([2, 2]), "Milestones must be greater than zero and strictly increasing"),
        (lambda: config([3, 2]), "Milestones must be greater than zero and strictly increasing"),
        (
            lambda: SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)], []),
            "Number of iterations must be at least 1",
        ),
    ],
)
def test_sequential_rejects_what_burn_rejects(make, message):
    with pytest.raises(ConfigError, match=message):
        make().build()


@pytest.mark.parametrize("save_at_step", [1, 4, 6])
def test_sequential_saves_and_loads_before_and_after_transitions(save_at_step):
    check_save_load(lambda: config([2, 5]).build(), save_at_step)


def test_book_sequential_warmup_then_cosine():
    # burn-book lr-scheduler.md:
    # let lr_scheduler = SequentialLrSchedulerConfig::new(
    #     vec![LinearLrSchedulerConfig::new(1e-6, 1e-3, 1_000).into(),
    #          CosineAnnealingLrSchedulerConfig::new(1e-3, 9_000).into()],
    #     vec![1_000]).init()?;
    lr_scheduler = SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(1e-6, 1e-3, 1_000),
            CosineAnnealingLrSchedulerConfig(1e-3, 9_000),
        ],
        [1_000],
    ).init()
    lrs = [lr_scheduler.step() for _ in range(1_002)]
    assert lrs[0] == pytest.approx(1e-6, abs=EPSILON)
    assert lrs[999] == pytest.approx(1e-6 + 999 * (1e-3 - 1e-6) / 1_000, abs=EPSILON)
    assert lrs[1_000] == pytest.approx(1e-3, abs=EPSILON)  # the cosine's first step
    expected = 0.5 * 1e-3 * (1 + math.cos(math.pi / 9_000))
    assert lrs[1_001] == pytest.approx(expected, abs=EPSILON)


def test_sequential_doc_example_with_enum_variants():
    # sequential.rs doc: vec![LrSchedulerConfig::Linear(LinearLrSchedulerConfig::new(1e-5, 1e-2,
    # 100)), LrSchedulerConfig::Cosine(CosineAnnealingLrSchedulerConfig::new(1e-2, 900))]
    config = SequentialLrSchedulerConfig(
        [
            LrSchedulerConfig.Linear(LinearLrSchedulerConfig(1e-5, 1e-2, 100)),
            LrSchedulerConfig.Cosine(CosineAnnealingLrSchedulerConfig(1e-2, 900)),
        ],
        [100],
    )
    scheduler = config.init()
    lrs = [scheduler.step() for _ in range(101)]
    assert lrs[0] == pytest.approx(1e-5) and lrs[100] == pytest.approx(1e-2)


# -- base.rs: the LrSchedulerConfig enum ------------------------------------------------------


def test_every_variant_builds_and_round_trips(tmp_path):
    composed = ComposedLrSchedulerConfig().constant(0.5).linear(LinearLrSchedulerConfig(1, 0.5, 2))
    variants = [
        LrSchedulerConfig.Constant(0.25),
        LrSchedulerConfig.Linear(LinearLrSchedulerConfig(0.9, 0.5, 4)),
        LrSchedulerConfig.Cosine(CosineAnnealingLrSchedulerConfig(0.5, 2)),
        LrSchedulerConfig.Exponential(ExponentialLrSchedulerConfig(0.8, 0.5)),
        LrSchedulerConfig.Noam(NoamLrSchedulerConfig(1.0)),
        LrSchedulerConfig.Step(StepLrSchedulerConfig(0.5, 2)),
        LrSchedulerConfig.Composed(composed),
        LrSchedulerConfig.Sequential(config([2, 5])),
    ]
    assert all(isinstance(variant, LrSchedulerConfig) for variant in variants)
    whole = ComposedLrSchedulerConfig(variants, SchedulerReduction.Sum)
    loaded = ComposedLrSchedulerConfig.load(whole.save(tmp_path / "scheduler.json"))
    assert loaded == whole
    first = whole.init().step()
    expected = 0.25 + 0.9 + 0.5 + 0.8 + NoamLrSchedulerConfig(1.0).init().step() + 0.5
    expected += 0.5 * 1.0 + 0.1
    assert first == pytest.approx(expected, abs=EPSILON)
    a, b = whole.init(), loaded.init()
    assert [a.step() for _ in range(9)] == pytest.approx([b.step() for _ in range(9)])


def test_variants_check_their_value():
    with pytest.raises(TypeError, match=r"Linear takes a LinearLrSchedulerConfig"):
        LrSchedulerConfig.Linear(CosineAnnealingLrSchedulerConfig(0.5, 2))
    with pytest.raises(TypeError, match=r"LrSchedulerConfig.Constant takes a float.*'0.1'"):
        LrSchedulerConfig.Constant("0.1")
    with pytest.raises(TypeError, match=r"Burn's enum: build a variant"):
        LrSchedulerConfig(0.1)
    assert not isinstance(True, LrSchedulerConfig)
    assert not isinstance(ConstantLr(0.1), LrSchedulerConfig)


def test_a_scheduler_object_in_a_config_names_the_fix():
    schedule = LinearLrSchedulerConfig(0.1, 0.2, 3).init()
    with pytest.raises(TypeError, match=r"must be a float .* or a scheduler config.*with_custom"):
        SequentialLrSchedulerConfig([schedule], []).init()
    with pytest.raises(TypeError, match=r"Received: 'fast' \(str\)"):
        ComposedLrSchedulerConfig(["fast"]).init()


# -- composed.rs ------------------------------------------------------------------------------


def test_composed_of_composed():
    # ComposedLrSchedulerConfig::new().constant(0.5).composed(
    #     ComposedLrSchedulerConfig::new().linear(..).constant(0.1)
    #         .with_reduction(SchedulerReduction::Sum))
    inner = (
        ComposedLrSchedulerConfig()
        .linear(LinearLrSchedulerConfig(0.9, 0.5, 4))
        .constant(0.1)
        .with_reduction(SchedulerReduction.Sum)
    )
    scheduler = ComposedLrSchedulerConfig().constant(0.5).composed(inner).init()
    check_lr_sequence(scheduler, [0.5 * (0.9 + 0.1), 0.5 * (0.8 + 0.1), 0.5 * (0.7 + 0.1)])
    check_save_load(lambda: ComposedLrSchedulerConfig().constant(0.5).composed(inner).init(), 2)


class Halving(LrScheduler):
    """A scheduler of the user's own: halves each step."""

    def __init__(self) -> None:
        self.lr = 2.0

    def step(self) -> float:
        self.lr /= 2
        return self.lr

    def to_record(self):
        return {"scheduler": "Halving", "lr": self.lr}

    def load_record(self, record):
        self.lr = record["lr"]
        return self


def test_with_custom_scheduler():
    # composed.build()?.with_custom_scheduler(MyScheduler::new())
    def make():
        config = ComposedLrSchedulerConfig().linear(LinearLrSchedulerConfig(0.9, 0.5, 4))
        return config.build().with_custom_scheduler(Halving())

    scheduler = make()
    assert isinstance(scheduler, ComposedLrScheduler)
    check_lr_sequence(scheduler, [0.9 * 1.0, 0.8 * 0.5, 0.7 * 0.25])
    check_save_load(make, 3)
    check_lr_sequence(ComposedLrSchedulerConfig().init().with_custom_scheduler(0.3), [0.3])
    with pytest.raises(TypeError, match=r"takes an LrScheduler .* Received: 'x' \(str\)"):
        ComposedLrSchedulerConfig().init().with_custom_scheduler("x")


def test_mnist_example_composed_scheduler():
    # examples/mnist/src/training.rs
    lr_scheduler = (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000))
    )
    scheduler = lr_scheduler.init()
    lrs = [scheduler.step() for _ in range(2)]
    assert lrs[0] == pytest.approx(1.0 * 1e-8 * 1e-2, rel=1e-12)
    cosine = 0.5 * (1 + math.cos(math.pi / 2000))
    linear = 1e-8 + (1.0 - 1e-8) / 2000
    decay = 1e-2 - (1e-2 - 1e-6) / 10000
    assert lrs[1] == pytest.approx(cosine * linear * decay, rel=1e-9)


# -- module_lr_scheduler.rs -------------------------------------------------------------------


def test_step_yields_constant_default_lr():
    scheduler = ModuleLrScheduler(0.01)
    for _ in range(3):
        assert abs(scheduler.step().base() - 0.01) < EPSILON


def test_step_advances_linear_default_scheduler():
    linear = LinearLrSchedulerConfig(0.9, 0.5, 4).build()
    scheduler = ModuleLrScheduler(linear)
    for expected_lr in [0.9, 0.8, 0.7, 0.6, 0.5, 0.5]:
        assert abs(scheduler.step().base() - expected_lr) < EPSILON


def test_path_group_matches_param_by_path_substring():
    scheduler = (
        ModuleLrSchedulerConfig(0.001).with_group(ParamGroup.from_predicate("backbone"), 0.1).init()
    )
    policy = scheduler.step()
    assert abs(policy.lr_from_param("model.backbone.layer.weight") - 0.1) < EPSILON
    assert abs(policy.lr_from_param("model.head.layer.weight") - 0.001) < EPSILON


def test_multiple_groups_are_independent():
    scheduler = (
        ModuleLrSchedulerConfig(LinearLrSchedulerConfig(0.001, 0.0001, 4))
        .with_group(ParamGroup.from_path("a"), LinearLrSchedulerConfig(0.1, 0.01, 4))
        .with_group(ParamGroup.from_path("b"), LinearLrSchedulerConfig(0.5, 0.05, 4))
        .init()
    )
    policy = scheduler.step()
    assert abs(policy.lr_from_param("a") - 0.1) < EPSILON
    assert abs(policy.lr_from_param("b") - 0.5) < EPSILON
    assert abs(policy.lr_from_param("default") - 0.001) < EPSILON
    policy = scheduler.step()
    assert 0.01 < policy.lr_from_param("a") < 0.1
    assert 0.05 < policy.lr_from_param("b") < 0.5
    assert 0.0001 < policy.lr_from_param("default") < 0.001


def test_save_load_with_groups_preserves_state():
    def make():
        return (
            ModuleLrSchedulerConfig(LinearLrSchedulerConfig(0.01, 0.001, 9))
            .with_group(ParamGroup.from_path("group"), LinearLrSchedulerConfig(0.1, 0.01, 9))
            .init()
        )

    original, truth = make(), make()
    for _ in range(5):
        original.step()
        truth.step()
    restored = make().load_record(original.to_record())
    for _ in range(4):
        lr_restored = restored.step().lr_from_param("group")
        assert abs(lr_restored - truth.step().lr_from_param("group")) < EPSILON


def test_module_config_errors():
    with pytest.raises(TypeError, match=r"`group` must be a ParamGroup.*Received: 'conv' \(str\)"):
        ModuleLrSchedulerConfig(0.1).with_group("conv", 0.2)
    bad = ModuleLrSchedulerConfig(0.1).with_group(
        ParamGroup.from_predicate("conv"), LinearLrSchedulerConfig(2.0, 0.1, 3)
    )
    with pytest.raises(ConfigError, match=r"Initial learning rate .* Received: initial_lr=2.0"):
        bad.init()
    assert bad.scheduler_groups[0][1] == LinearLrSchedulerConfig(2.0, 0.1, 3)
    assert ModuleLrSchedulerConfig(0.1) == ModuleLrSchedulerConfig(0.1) != bad


def test_book_learner_parameter_group_snippet():
    # burn-book learner.md, "Parameter Groups":
    # let lr_scheduler = lr_scheduler_base.init().unwrap().with_group(
    #     ParamGroup::from_predicate("conv"),
    #     LinearLrSchedulerConfig::new(1e-6, 1e-3, 14000).build().unwrap());
    lr_scheduler_base = (
        ComposedLrSchedulerConfig()
        .cosine(CosineAnnealingLrSchedulerConfig(1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-8, 1.0, 2000))
        .linear(LinearLrSchedulerConfig(1e-2, 1e-6, 10000))
    )
    lr_scheduler = lr_scheduler_base.init().with_group(
        ParamGroup.from_predicate("conv"),
        LinearLrSchedulerConfig(1e-6, 1e-3, 14000).build(),
    )
    assert isinstance(lr_scheduler, ModuleLrScheduler)
    lr = lr_scheduler.step()
    assert lr.base() == pytest.approx(1e-10, rel=1e-12)
    assert lr.lr_from_param("conv1.weight") == pytest.approx(1e-6, rel=1e-12)
    assert lr.lr_from_param("linear.weight") == pytest.approx(1e-10, rel=1e-12)


def test_frozen_group_param_unchanged_after_training(tmp_path):
    # crates/burn-train/tests/module_lr_scheduler.rs
    bn.seed(0)
    model = Mlp()
    before_frozen = model.linear1.weight.detach().clone()
    before_active = model.linear2.weight.detach().clone()
    optim = SgdConfig().init()
    scheduler = (
        ModuleLrSchedulerConfig(1e-2).with_group(ParamGroup.from_predicate("linear1"), 0.0).init()
    )
    batches = DataLoaderBuilder(MnistBatcher()).batch_size(32)
    dl_train = batches.build(PartialDataset(mnist("train"), 0, 96))
    dl_valid = batches.build(PartialDataset(mnist("test"), 0, 32))
    result = (
        SupervisedTraining(tmp_path, dl_train, dl_valid)
        .num_epochs(1)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .with_application_logger(None)
        .launch(Learner(model, optim, scheduler))
    )
    assert torch.equal(result.model.linear1.weight.detach(), before_frozen)
    assert not torch.equal(result.model.linear2.weight.detach(), before_active)


# -- docs/burn.md's scheduler rows, as written there -------------------------------------------


def test_burn_md_cosine_then_constant_min_lr():
    # burn.md: SequentialLrSchedulerConfig([cos, min_lr], [num_iters + 1]); the earlier advice
    # spelled the constant ConstantLr(min_lr), which raised AttributeError (issue 39, item 7).
    num_iters, min_lr = 4, 0.01
    cos = CosineAnnealingLrSchedulerConfig(0.5, num_iters).with_min_lr(min_lr)
    for constant in (min_lr, ConstantLr(min_lr), LrSchedulerConfig.Constant(min_lr)):
        scheduler = SequentialLrSchedulerConfig([cos, constant], [num_iters + 1]).init()
        lrs = [scheduler.step() for _ in range(8)]
        assert lrs[0] == pytest.approx(0.5) and lrs[2] == pytest.approx((0.5 + min_lr) / 2)
        assert lrs[num_iters:] == pytest.approx([min_lr] * 4)


def test_burn_md_leaf_rows():
    assert ConstantLr(0.3).step() == 0.3
    check_lr_sequence(LinearLrSchedulerConfig(0.9, 0.5, 4).init(), [0.9, 0.8])
    check_lr_sequence(ExponentialLrSchedulerConfig(0.8, 0.5).init(), [0.8, 0.4])
    noam = NoamLrSchedulerConfig(2.0).with_warmup_steps(4).with_model_size(16).init()
    check_lr_sequence(noam, [2.0 / 4 * 1 * 4**-1.5, 2.0 / 4 * 2 * 4**-1.5])
    check_lr_sequence(StepLrSchedulerConfig(0.5, 2).init(), [0.5, 0.5, 0.05])

"""The parameter tables cached per module: reused every step, rebuilt whenever they must be.

Each change to a module between two steps (a parameter added or replaced, a submodule
swapped, inserted or removed, a record loaded, a copy forked) is followed by a step that must
move exactly the module's current parameters by `-lr * grad`, the gradient computed by
`torch.autograd.grad` independently. The proxy of the per-iteration cost counts the module
tree walks (`named_modules` / `named_parameters`) of training iterations: none after the first,
and the lines of burnish's own code run per iteration: as many for 80 parameter tensors as for 8.
"""

from __future__ import annotations

import gc
import sys
import weakref
from pathlib import Path

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.module import fork
from burnish.optim import (
    AdamConfig,
    AdamWConfig,
    AdanConfig,
    GradientClippingConfig,
    GradientsAccumulator,
    GradientsParams,
    LBFGSConfig,
    LineSearchFn,
    ModuleOptimizer,
    MuonConfig,
    ParamGroup,
    SgdConfig,
    WeightDecayConfig,
)
from burnish.optim.param_table import param_table

from tests.helpers import assert_close

F64 = torch.float64
LR = 0.1


class Net(nn.Module):
    """A linear, a list of blocks, and an optional `scale` parameter."""

    def __init__(self, blocks: int = 2, bias: bool = True) -> None:
        super().__init__()
        bn.seed(1)
        self.first = nn.Linear(3, 4, bias=bias, dtype=F64)
        self.blocks = nn.ModuleList(nn.Linear(4, 4, bias=bias, dtype=F64) for _ in range(blocks))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first(x)
        for block in self.blocks:
            x = torch.tanh(block(x))
        scale = getattr(self, "scale", None)
        return x if scale is None else x * scale


def _loss(model: nn.Module) -> torch.Tensor:
    x = torch.linspace(-1, 1, 15, dtype=F64).reshape(5, 3)
    return (model(x) ** 2).mean()


def _expected_sgd_step(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every parameter after one plain SGD step, from gradients autograd computes directly."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    grads = torch.autograd.grad(_loss(model), [p for _, p in named], allow_unused=True)
    expected = {n: p.detach().clone() for n, p in model.named_parameters()}
    for (name, param), grad in zip(named, grads):
        if grad is not None:
            expected[name] = param.detach() - LR * grad
    return expected


def _step(model: nn.Module, optim=None) -> GradientsParams:
    grads = GradientsParams.from_grads(bn.backward(_loss(model)), model)
    names = grads.ids()
    (optim or SgdConfig().init()).step(LR, model, grads)
    assert len(grads) == 0, "the step consumes every gradient of the model"
    return names


def _assert_steps_current_params(model: nn.Module) -> None:
    expected = _expected_sgd_step(model)
    ids = _step(model)
    assert ids == [n for n, p in model.named_parameters() if p.requires_grad]
    actual = {n: p.detach() for n, p in model.named_parameters()}
    assert_close(actual, expected, atol=1e-12, rtol=1e-12)


def test_table_is_reused_until_the_parameters_change():
    model = Net()
    state = Net(blocks=2).state_dict()
    _step(model)
    table = param_table(model)
    _step(model)
    model.load_state_dict(state)  # copies into the same parameters
    model.to(F64)
    assert param_table(model) is table
    nn.Linear(2, 2)  # a registration anywhere: the tables are rebuilt, once
    assert param_table(model) is not table
    table = param_table(model)
    assert param_table(model) is table
    model.scale = nn.Parameter(torch.ones(4, dtype=F64))
    rebuilt = param_table(model)
    assert rebuilt is not table and "scale" in rebuilt.names


def test_parameter_added_after_a_step_is_stepped():
    model = Net()
    _step(model)
    model.scale = nn.Parameter(torch.full((4,), 2.0, dtype=F64))
    _assert_steps_current_params(model)
    assert not torch.equal(model.scale.detach(), torch.full((4,), 2.0, dtype=F64))


def test_replaced_parameter_is_stepped_and_the_old_one_is_not():
    model = Net()
    _step(model)
    old = model.first.weight
    before = old.detach().clone()
    model.first.weight = nn.Parameter(torch.ones(4, 3, dtype=F64))
    _assert_steps_current_params(model)
    assert torch.equal(old.detach(), before)
    assert not torch.equal(model.first.weight.detach(), torch.ones(4, 3, dtype=F64))


def test_swapped_submodule_is_stepped_and_the_old_one_is_not():
    model = Net()
    _step(model)
    old = model.first
    before = old.weight.detach().clone()
    bn.seed(5)
    model.first = nn.Linear(3, 4, dtype=F64)
    _assert_steps_current_params(model)
    assert torch.equal(old.weight.detach(), before)


def test_container_insert_pop_and_delete_are_seen():
    """`ModuleList.insert`/`pop`/`del` write the container's dict directly, without a hook."""
    model = Net(blocks=3)
    _step(model)
    bn.seed(6)
    model.blocks.insert(0, nn.Linear(4, 4, dtype=F64))
    _assert_steps_current_params(model)
    removed = model.blocks.pop(1)
    before = removed.weight.detach().clone()
    _assert_steps_current_params(model)
    assert torch.equal(removed.weight.detach(), before)
    model.blocks.insert(1, removed)  # same size as before the pop, other order
    _assert_steps_current_params(model)
    del model.blocks[0]
    _assert_steps_current_params(model)
    assert len(param_table(model).params) == 2 + 2 * 3


def test_deleted_parameter_is_no_longer_stepped():
    model = Net()
    model.scale = nn.Parameter(torch.ones(4, dtype=F64))
    _step(model)
    del model.scale
    _assert_steps_current_params(model)
    assert "scale" not in param_table(model).names


def test_loaded_record_is_stepped_from_its_values():
    model = Net()
    _step(model)
    record = bn.into_record(Net(blocks=2))
    bn.load_record(model, {k: v.clone() + 1 for k, v in record.items()})
    assert_close(model.first.bias.detach(), record["first.bias"] + 1)
    _assert_steps_current_params(model)


def test_load_state_dict_with_assign_replaces_the_parameters():
    model = Net()
    _step(model)
    old = model.first.weight
    model.load_state_dict({k: v.clone() for k, v in Net().state_dict().items()}, assign=True)
    assert model.first.weight is not old
    _assert_steps_current_params(model)
    assert all(any(p is q for q in param_table(model).params) for p in model.parameters())


def test_fork_steps_its_own_tensors_and_the_original_steps_its_own():
    model = Net()
    _step(model)
    forked = fork(model, "cpu")
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    _assert_steps_current_params(forked)
    assert_close(dict(model.named_parameters()), original, atol=0, rtol=0)
    copy = {n: p.detach().clone() for n, p in forked.named_parameters()}
    _assert_steps_current_params(model)
    assert_close(dict(forked.named_parameters()), copy, atol=0, rtol=0)


def test_valid_twin_sees_the_steps_of_its_module():
    model = Net()
    _step(model)
    twin = bn.valid(model)
    _assert_steps_current_params(model)
    assert_close(dict(twin.named_parameters()), dict(model.named_parameters()), atol=0, rtol=0)
    assert param_table(twin).params[0] is not param_table(model).params[0]


def test_dtype_conversion_keeps_the_table_and_steps_the_converted_tensors():
    model = Net()
    _step(model)
    table = param_table(model)
    model.to(torch.float32).to(F64)
    assert param_table(model) is table
    _assert_steps_current_params(model)


def test_conversion_that_overwrites_parameters_is_seen():
    model = Net()
    _step(model)
    old = model.first.weight
    previous = torch.__future__.get_overwrite_module_params_on_conversion()
    torch.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        model.to(torch.float32).to(F64)
        assert model.first.weight is not old
        _assert_steps_current_params(model)
    finally:
        torch.__future__.set_overwrite_module_params_on_conversion(previous)


def test_frozen_parameter_is_not_stepped_and_unfrozen_it_is_again():
    model = Net()
    _step(model)
    model.first.weight.requires_grad_(False)
    before = model.first.weight.detach().clone()
    _assert_steps_current_params(model)
    assert torch.equal(model.first.weight.detach(), before)
    model.first.weight.requires_grad_(True)
    _assert_steps_current_params(model)
    assert not torch.equal(model.first.weight.detach(), before)


def test_submodule_swapped_between_gradients_and_step():
    """The step applies gradients only to the module's parameters at the time of the step."""
    model = Net()
    _step(model)
    grads = GradientsParams.from_grads(bn.backward(_loss(model)), model)
    old = model.first
    before = old.weight.detach().clone()
    model.first = nn.Linear(3, 4, dtype=F64)
    fresh = model.first.weight.detach().clone()
    SgdConfig().init().step(LR, model, grads)
    assert sorted(grads.ids()) == ["first.bias", "first.weight"]  # the old first's, left
    assert torch.equal(old.weight.detach(), before)
    assert torch.equal(model.first.weight.detach(), fresh)


def test_table_of_a_submodule_and_of_the_whole_model_agree():
    """Gradients taken from a submodule step the whole model under the model's names."""
    model = Net()
    optim = AdamConfig().init()
    grads = GradientsParams.from_grads(bn.backward(_loss(model)), model.blocks)
    assert grads.ids() == ["0.weight", "0.bias", "1.weight", "1.bias"]
    before = model.first.weight.detach().clone()
    optim.step(LR, model, grads)
    assert sorted(optim.to_record()["state"]) == sorted(
        f"blocks.{i}.{k}" for i in range(2) for k in ("weight", "bias")
    )
    assert torch.equal(model.first.weight.detach(), before)


def test_unused_and_aliased_gradients_together():
    """Some gradients absent (unused parameters) and two inputs sharing one gradient."""
    module = nn.Module()
    module.a = nn.Parameter(torch.ones(3))
    module.unused = nn.Parameter(torch.ones(2))
    module.b = nn.Parameter(torch.ones(3))
    grads = GradientsParams.from_grads(bn.backward((module.a + module.b).sum()), module)
    assert grads.ids() == ["a", "b"]
    assert grads.get("a").data_ptr() != grads.get("b").data_ptr()


def test_table_does_not_keep_its_module_alive():
    model = Net()
    _step(model)
    ref = weakref.ref(model)
    del model
    gc.collect()
    assert ref() is None


def test_not_a_module_is_refused():
    with pytest.raises(TypeError, match=r"Expected a torch\.nn\.Module\. Received: dict"):
        param_table({})


# -- the CPU proxy of per-iteration cost ------------------------------------------------------


@pytest.fixture
def walks(monkeypatch):
    """Counts calls of `nn.Module.named_modules` and `nn.Module.named_parameters`."""
    counts = {"named_modules": 0, "named_parameters": 0}
    for name in counts:
        original = getattr(nn.Module, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            counts[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(nn.Module, name, counting)
    return counts


@pytest.mark.parametrize(
    "optim",
    [
        AdamConfig(weight_decay=WeightDecayConfig(0.01)),
        AdamConfig(grad_clipping=GradientClippingConfig.norm(0.5)),
        AdamConfig(grad_clipping=GradientClippingConfig.global_norm(0.5)),
        SgdConfig(weight_decay=WeightDecayConfig(0.01)),
    ],
    ids=["adam-decay", "adam-clip-norm", "adam-clip-global-norm", "sgd-decay"],
)
def test_custom_loop_walks_the_module_tree_only_in_its_first_iteration(walks, optim):
    model = Net(blocks=4)
    optim = optim.init()

    def iteration() -> None:
        grads = GradientsParams.from_grads(bn.backward(_loss(model)), model)
        optim.step(LR, model, grads)

    iteration()
    assert walks["named_modules"] > 0  # the counter sees the first iteration's walk
    walks.update(named_modules=0, named_parameters=0)
    for _ in range(10):
        iteration()
    assert walks == {"named_modules": 0, "named_parameters": 0}


def test_accumulation_walks_the_module_tree_only_once(walks):
    model = Net(blocks=4)
    optim = SgdConfig().init()
    accumulator = GradientsAccumulator()

    def iteration() -> None:
        for _ in range(3):
            grads = GradientsParams.from_grads(bn.backward(_loss(model)), model)
            accumulator.accumulate(model, grads)
        optim.step(LR, model, accumulator.grads())

    iteration()
    walks.update(named_modules=0, named_parameters=0)
    for _ in range(10):
        iteration()
    assert walks == {"named_modules": 0, "named_parameters": 0}


class _Regression(Net):
    """`Net` with the Learner's `train_step` / `valid_step`."""

    def train_step(self, batch):
        from burnish.train import RegressionOutput, TrainOutput

        output = self(batch[0])
        item = RegressionOutput(((output - batch[1]) ** 2).mean(), output, batch[1])
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch):
        from burnish.train import RegressionOutput

        output = self(batch[0])
        return RegressionOutput(((output - batch[1]) ** 2).mean(), output, batch[1])


class _Grouped:
    """A `ModuleOptimizer` as a config: AdamW without decay on the biases, and a
    `ModuleLrScheduler` giving the first layer its own rate (`scheduler()`)."""

    def init(self) -> ModuleOptimizer:
        from burnish.optim import AdamWConfig

        return ModuleOptimizer(AdamWConfig(weight_decay=0.1)).with_group(
            ParamGroup.from_regex(r"bias$"), AdamWConfig(weight_decay=0.0)
        )

    def scheduler(self):
        from burnish.lr_scheduler import LinearLrSchedulerConfig, ModuleLrScheduler

        return ModuleLrScheduler(LR).with_group(
            ParamGroup.from_predicate("first."), LinearLrSchedulerConfig(LR, LR / 10, 8)
        )


def _lr_scheduler(optim):
    """The grouped optimizer's scheduler, else the constant `LR`."""
    return optim.scheduler() if isinstance(optim, _Grouped) else None


def _learner(directory, blocks: int = 4, optim=None, configure=lambda builder: builder):
    from burnish.train import LearnerBuilder
    from burnish.train.metric import LossMetric
    from burnish.train.renderer import NullRenderer

    builder = (
        LearnerBuilder(directory)
        .metric_train_numeric(LossMetric())
        .renderer(NullRenderer())
        .num_epochs(1)
    )
    model, optim = _Regression(blocks=blocks), optim or AdamConfig()
    return configure(builder).build(model, optim.init(), _lr_scheduler(optim) or LR)


def _batches(iterations: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    gen = torch.Generator().manual_seed(0)
    return [
        (torch.randn(4, 3, generator=gen, dtype=F64), torch.randn(4, 4, generator=gen, dtype=F64))
        for _ in range(iterations)
    ]


def _fit_walks(walks, tmp_path, iterations: int) -> int:
    learner = _learner(tmp_path / f"run-{iterations}")
    batches = _batches(iterations)
    walks.update(named_modules=0, named_parameters=0)
    learner.fit(batches, batches[:1])
    return walks["named_modules"] + walks["named_parameters"]


def test_learner_walks_the_module_tree_a_fixed_number_of_times_per_fit(walks, tmp_path):
    """A fit of 12 iterations walks the tree as often as one of 2: nothing per iteration."""
    long, short = _fit_walks(walks, tmp_path, 12), _fit_walks(walks, tmp_path, 2)
    assert short > 0  # the counter sees the walks of the first iteration and the set-up
    assert long == short


class _BurnishLines:
    """Counts the lines of burnish's own files executed (a line run again by a loop counts
    again, comprehensions and generators included), the finest proxy of its Python work."""

    root = str(Path(bn.__file__).parent)

    def __init__(self) -> None:
        self.count = 0

    def __enter__(self) -> _BurnishLines:
        # Finalizers of objects left in reference cycles by earlier runs (a logger's `__del__`)
        # run when the collector runs: it must not run inside the count. (Not collecting them
        # first: a full collection of the test process's heap costs a quarter of a second.)
        gc.disable()
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.settrace(None)
        gc.enable()

    def _call(self, frame, event: str, arg: object):
        if frame.f_code.co_filename.startswith(self.root):
            return self._line
        return None

    def _line(self, frame, event: str, arg: object):
        if event == "line":
            self.count += 1
        return self._line


OPTIMIZERS = [
    AdamConfig(weight_decay=WeightDecayConfig(0.01)),
    AdamConfig(grad_clipping=GradientClippingConfig.norm(0.5)),
    AdamConfig(grad_clipping=GradientClippingConfig.value(0.5)),
    AdamConfig(grad_clipping=GradientClippingConfig.global_norm(0.5)),
    SgdConfig(weight_decay=WeightDecayConfig(0.01)),
    AdamConfig(amsgrad=True),
    AdamWConfig(weight_decay=0.01, amsgrad=True, cautious_weight_decay=True),
    AdanConfig(weight_decay=0.01),
    AdanConfig(weight_decay=0.01, no_prox=True, grad_clipping=GradientClippingConfig.norm(0.5)),
    MuonConfig(weight_decay=WeightDecayConfig(0.01)),
    _Grouped(),
]
OPTIMIZER_IDS = [
    "adam-decay",
    "adam-clip-norm",
    "adam-clip-value",
    "adam-clip-global-norm",
    "sgd-decay",
    "adam-amsgrad",
    "adamw-amsgrad-cautious",
    "adan",
    "adan-no-prox-clip",
    "muon",
    "module-optimizer-groups",
]


def _custom_loop_lines(blocks: int, optim) -> int:
    """burnish's lines run in 5 iterations of a custom loop, after a first one."""
    matrices_only = isinstance(optim, MuonConfig)  # Muon steps weight matrices only
    model = Net(blocks=blocks, bias=not matrices_only)
    scheduler, optim = _lr_scheduler(optim), optim.init()
    accumulator = GradientsAccumulator()

    def iteration() -> None:
        lr = LR if scheduler is None else scheduler.step()
        for _ in range(2):
            grads = GradientsParams.from_grads(bn.backward(_loss(model)), model)
            accumulator.accumulate(model, grads)
        optim.step(lr, model, accumulator.grads())

    iteration()
    with _BurnishLines() as lines:
        for _ in range(5):
            iteration()
    return lines.count


@pytest.mark.parametrize("optim", OPTIMIZERS, ids=OPTIMIZER_IDS)
def test_custom_loop_python_work_does_not_grow_with_the_parameter_count(optim):
    """`bn.backward` -> `GradientsParams` -> accumulation -> `optim.step`: O(1) Python."""
    few, many = _custom_loop_lines(4, optim), _custom_loop_lines(40, optim)
    assert few > 0  # the counter sees burnish's lines
    assert many == few


def _lbfgs_lines(blocks: int, line_search: LineSearchFn | None) -> int:
    """burnish's lines run in 3 L-BFGS steps (3 iterations each), after a first one."""
    model = Net(blocks=blocks)
    optim = LBFGSConfig(max_iter=3, tolerance_grad=0.0, tolerance_change=0.0,
                        line_search_fn=line_search).init()  # fmt: skip
    optim.step(LR, model, _loss)
    with _BurnishLines() as lines:
        for _ in range(3):
            optim.step(LR, model, _loss)
    return lines.count


@pytest.mark.parametrize("line_search", [None, LineSearchFn.StrongWolfe], ids=["fixed", "wolfe"])
def test_lbfgs_python_work_does_not_grow_with_the_parameter_count(line_search):
    """Flattening and writing back the parameters are C-level maps: O(1) Python per step."""
    few, many = _lbfgs_lines(4, line_search), _lbfgs_lines(40, line_search)
    assert few > 0
    assert many == few


def _learner_lines(tmp_path, blocks: int, iterations: int, optim, configure) -> int:
    learner = _learner(tmp_path / f"blocks-{blocks}-{iterations}", blocks, optim, configure)
    batches = _batches(iterations)
    with _BurnishLines() as lines:
        learner.fit(batches, batches[:1])
    return lines.count


LEARNER_SETTINGS = {
    "adam": (AdamConfig(), lambda b: b),
    "sgd-decay": (SgdConfig(weight_decay=WeightDecayConfig(0.01)), lambda b: b),
    "accumulation": (AdamConfig(), lambda b: b.grads_accumulation(2)),
    "clip-norm-fp16": (
        AdamConfig(grad_clipping=GradientClippingConfig.norm(0.5)),
        lambda b: b.mixed_precision("fp16"),
    ),
    "clip-global-norm-fp16": (
        AdamConfig(grad_clipping=GradientClippingConfig.global_norm(0.5)),
        lambda b: b.mixed_precision("fp16"),
    ),
    "bf16": (AdamConfig(), lambda b: b.mixed_precision("bf16")),
    "ema": (AdamConfig(), lambda b: b.with_ema(0.99, warmup=True, validate="both")),
    "skip": (AdamConfig(), lambda b: b.on_non_finite("skip")),
    "stop+ema+accumulation": (
        AdamConfig(),
        lambda b: b.on_non_finite("stop").with_ema(0.9, update_every=2).grads_accumulation(2),
    ),
    "skip+fp16": (AdamConfig(), lambda b: b.on_non_finite("skip").mixed_precision("fp16")),
    "module-optimizer-groups": (_Grouped(), lambda b: b),
    "module-optimizer-groups+fp16+accumulation": (
        _Grouped(),
        lambda b: b.mixed_precision("fp16").grads_accumulation(2, lr_step="optimizer_step"),
    ),
}


@pytest.mark.parametrize("setting", LEARNER_SETTINGS)
def test_learner_python_work_per_iteration_does_not_grow_with_the_parameter_count(
    tmp_path, setting
):
    """Ten more iterations run as many lines of burnish with 80 parameter tensors as with 8.

    The set-up (parameter tables, summary, checkpoint) may scale with the model; the
    difference between a fit of 12 iterations and one of 2 is the per-iteration cost only.
    """
    optim, configure = LEARNER_SETTINGS[setting]
    _learner_lines(tmp_path / "warm-up", 4, 2, optim, configure)
    per_ten = {
        blocks: _learner_lines(tmp_path, blocks, 12, optim, configure)
        - _learner_lines(tmp_path, blocks, 2, optim, configure)
        for blocks in (4, 40)
    }
    assert per_ten[4] > 10  # each iteration runs some lines, and the counter sees them
    assert per_ten[40] == per_ten[4]

"""Every builder method in burnish is a value (issue 41, item 8), not only the `*Builder`
classes' (tests/test_value_builder.py): the stores', filters', adapters', records', metrics',
optimizers', schedulers' and configs' `with_*` and other methods that return their own type.

The methods are enumerated from the source (public methods named `with_*`/`without_*`, or
annotated to return their class or `Self`, or that `return self`), so a new one without a row
in `SAMPLES` (or one that changes the object it is called on) fails here. A method that is not
a builder is listed in `NOT_VALUES` with the reason.
"""

from __future__ import annotations

import ast
import pathlib

import numpy as np
import pytest
import torch

import burnish
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataloader.batcher import Batcher
from burnish.data.dataset import InMemDataset, SelectionDataset
from burnish.data.dataset.sqlite import SqliteDatasetStorage
from burnish.errors import RecordError
from burnish.lr_scheduler import (
    ComposedLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    ModuleLrScheduler,
    ModuleLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
)
from burnish.optim import AdamConfig, GradientsParams, ModuleOptimizer, ParamGroup, SgdConfig
from burnish.optim.clipping import GradientClippingConfig
from burnish.record import LoadArgs
from burnish.record.store import (
    BurnpackStore,
    BurnToPyTorchAdapter,
    HalfPrecisionAdapter,
    KeyRemapper,
    PathFilter,
    PytorchStore,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    load_from,
    save_into,
)
from burnish.record.store.module_record import DTypePolicy, ModuleRecord
from burnish.record.store.snapshot import TensorSnapshot
from burnish.train import (
    Aggregate,
    Direction,
    MetricEarlyStoppingStrategy,
    StoppingCondition,
)
from burnish.train.metric import AccuracyMetric, HammingScore, PerplexityMetric
from burnish.train.metric.bleu import BleuScore, BleuSmoothing
from burnish.train.metric.error_rate import CharErrorRate
from burnish.train.metric.rouge import RougeLScore
from burnish.train.metric.vision.ms_ssim import MsSsimMetric, MsSsimMetricConfig
from burnish.train.metric.vision.psnr import PsnrMetric, PsnrMetricConfig
from burnish.train.metric.vision.ssim import SsimMetric, SsimMetricConfig
from burnish.train.report.summary import LearnerSummary, SummaryMetrics
from burnish.train.settings.builder import TrainingBuilder
from burnish.vision.transform2d import Transform2D

from tests.test_value_builder import BUILDERS, containers

SRC = pathlib.Path(burnish.__file__).parent

#: Methods that return their own type (or `self`) without being builders, and why.
NOT_VALUES = {
    "load_record": "restores a saved state into the object, in place (torch's load_state_dict)",
    "Optimizer.load": "loads a saved state into the optimizer, in place (Burn main's load)",
    "PinnableBatch.pin_memory": "torch's DataLoader protocol: pins the batch's tensors",
    "GradScaler.to_device": "moves the scaler's runtime tensors, as torch's Module.to",
    "GradientsParams.to_device": "moves a step's gradients, as torch's Module.to",
    "DataAdapter.to_device": "a run's view of a loader for a device (the learner's, per run)",
    "DataAdapter.shard": "a run's view of a loader for a rank (the learner's, per run)",
    "BurnishDataAdapter.to_device": "a run's view of a loader (a new adapter)",
    "BurnishDataAdapter.shard": "a run's view of a loader (a new adapter)",
    "IterableDataAdapter.to_device": "changes nothing: the foreign loader's batches stay",
    "IterableDataAdapter.shard": "changes nothing: every rank reads the foreign loader",
    "ModuleLearningRate.base": "a float subclass: returns a number",
    "ModuleLearningRate.lr_from_param": "a float subclass: returns a number",
    "MetricLogger.for_split": "a logger's view for one split (the run's, not a setting)",
    "FileMetricLogger.for_split": "a logger's view for one split (the run's, not a setting)",
    "InMemoryMetricLogger.for_split": "a logger's view for one split (the run's, not a setting)",
    "MetricInputError.for_metric": "an exception: a new error naming the metric",
}


def _stepped(optim):
    """`optim` after one step of a tiny model: it holds state."""
    model = torch.nn.Linear(3, 2)
    loss = model(torch.ones(4, 3)).square().sum()
    grads = GradientsParams.from_grads(burnish.backward(loss), model)
    optim.step(0.1, model, grads)
    return optim


def _scheduler_stepped_twice():
    scheduler = LinearLrSchedulerConfig(1.0, 0.5, 10).init()
    scheduler.step(), scheduler.step()
    return scheduler


class Stack(Batcher):
    def batch(self, items, device):
        return torch.tensor(items, device=device)


def _loader():
    dataset = SelectionDataset(InMemDataset(list(range(8))), list(range(8)))
    return DataLoaderBuilder(Stack()).batch_size(2).build(dataset)


def _store(tmp_path):
    return BurnpackStore.from_file(tmp_path / "m").metadata("seed", "1").with_regex("w")


def samples(tmp_path):
    """`Class.method` -> (a function making the object, the method's arguments)."""
    linear = torch.nn.Linear(2, 3)
    head = ParamGroup.from_predicate("bias")
    early = MetricEarlyStoppingStrategy(
        "Loss", Aggregate.MEAN, Direction.LOWEST, "valid", StoppingCondition.no_improvement_since(2)
    )
    store = {
        "allow_partial": (),
        "clear_metadata": (),
        "filter": (PathFilter().with_regex("b"),),
        "map_indices_contiguous": (),
        "match_all": (),
        "metadata": ("k", "v"),
        "overwrite": (),
        "remap": (KeyRemapper().add_pattern("a", "b"),),
        "skip_enum_variants": (),
        "validate": (False,),
        "with_from_adapter": (BurnToPyTorchAdapter(),),
        "with_full_path": ("a.b",),
        "with_full_paths": (["a.b", "c"],),
        "with_key_remapping": ("^a", "b"),
        "with_predicate": (lambda path, container: True,),
        "with_predicates": ([lambda path, container: True],),
        "with_regex": ("b",),
        "with_regexes": (["b", "c"],),
        "with_to_adapter": (PyTorchToBurnAdapter(),),
    }
    table = {
        f"ModuleStore.{name}": (lambda: _store(tmp_path), args) for name, args in store.items()
    }
    path_filter = {
        name: args
        for name, args in store.items()
        if name.startswith(("with_r", "with_f", "with_p", "match"))
    }
    table |= {
        f"PathFilter.{name}": (lambda: PathFilter().with_regex("w"), args)
        for name, args in path_filter.items()
    }
    record = lambda: ModuleRecord.from_module(linear).with_dtype_policy(DTypePolicy.FromRecord)  # noqa: E731
    psnr, ssim, ms_ssim = PsnrMetricConfig(1.0), SsimMetricConfig(1.0), MsSsimMetricConfig(1.0)
    composed = ComposedLrSchedulerConfig
    return table | {
        "BurnpackStore.auto_extension": (lambda: _store(tmp_path), (False,)),
        "PytorchStore.with_top_level_key": (
            lambda: PytorchStore.from_file(tmp_path / "x.pt"),
            ("state_dict",),
        ),
        "KeyRemapper.add_pattern": (lambda: KeyRemapper().add_pattern("a", "b"), ("c", "d")),
        "HalfPrecisionAdapter.with_module": (HalfPrecisionAdapter, ("BatchNorm",)),
        "HalfPrecisionAdapter.without_module": (HalfPrecisionAdapter, ("LayerNorm",)),
        "LoadArgs.with_key_remap": (lambda: LoadArgs("x.pt").with_key_remap("a", "b"), ("^c", "d")),
        "LoadArgs.with_top_level_key": (lambda: LoadArgs("x.pt"), ("state_dict",)),
        "ModuleRecord.allow_partial": (record, ()),
        "ModuleRecord.allow_unused": (record, ()),
        "ModuleRecord.cast_to_module_dtype": (record, ()),
        "ModuleRecord.validate": (record, (False,)),
        "ModuleRecord.with_dtype_policy": (record, (DTypePolicy.CastToModule,)),
        "TensorSnapshot.with_path": (
            lambda: TensorSnapshot.from_tensor("a", torch.zeros(2)),
            (("b",), ()),
        ),
        "SqliteDatasetStorage.with_base_dir": (
            lambda: SqliteDatasetStorage.from_name("x"),
            (tmp_path,),
        ),
        "LrScheduler.with_group": (_scheduler_stepped_twice, (head, 0.01)),
        "ModuleLrScheduler.with_group": (
            lambda: ModuleLrScheduler(_scheduler_stepped_twice()),
            (head, 0.01),
        ),
        "ModuleLrSchedulerConfig.with_group": (lambda: ModuleLrSchedulerConfig(0.1), (head, 0.01)),
        "ComposedLrScheduler.with_custom_scheduler": (
            lambda: composed().constant(0.1).init(),
            (0.5,),
        ),
        "ComposedLrSchedulerConfig.constant": (composed, (0.1,)),
        "ComposedLrSchedulerConfig.linear": (composed, (LinearLrSchedulerConfig(1.0, 0.5, 10),)),
        "ComposedLrSchedulerConfig.cosine": (
            composed,
            (CosineAnnealingLrSchedulerConfig(1.0, 10),),
        ),
        "ComposedLrSchedulerConfig.exponential": (
            composed,
            (ExponentialLrSchedulerConfig(1.0, 0.9),),
        ),
        "ComposedLrSchedulerConfig.noam": (composed, (NoamLrSchedulerConfig(1.0),)),
        "ComposedLrSchedulerConfig.step": (composed, (StepLrSchedulerConfig(1.0, 2),)),
        "ComposedLrSchedulerConfig.composed": (composed, (composed().constant(0.1),)),
        "Optimizer.with_grad_clipping": (
            lambda: _stepped(AdamConfig().init()),
            (GradientClippingConfig.norm(1.0),),
        ),
        "Optimizer.with_group": (lambda: _stepped(AdamConfig().init()), (head, SgdConfig())),
        "ModuleOptimizer.with_group": (
            lambda: _stepped(ModuleOptimizer(AdamConfig())),
            (head, SgdConfig()),
        ),
        "ParamGroup.fuse": (lambda: ParamGroup.from_predicate("a"), (head,)),
        "ParamGroup.exclude": (lambda: ParamGroup.from_predicate("a"), (head,)),
        "MetricEarlyStoppingStrategy.with_warmup_epochs": (lambda: early, (2,)),
        "_PaddedAccuracy.with_pad_token": (AccuracyMetric, (0,)),
        "BleuScore.with_pad_token": (BleuScore, (0,)),
        "BleuScore.with_smoothing": (BleuScore, (BleuSmoothing.add_epsilon(),)),
        "_ErrorRate.with_pad_token": (CharErrorRate, (0,)),
        "HammingScore.with_sigmoid": (HammingScore, (True,)),
        "HammingScore.with_threshold": (HammingScore, (0.7,)),
        "PerplexityMetric.with_pad_token": (PerplexityMetric, (0,)),
        "RougeLScore.with_pad_token": (RougeLScore, (0,)),
        "PsnrMetric.with_name": (lambda: PsnrMetric(psnr), ("P",)),
        "SsimMetric.with_name": (lambda: SsimMetric(ssim), ("S",)),
        "MsSsimMetric.with_name": (lambda: MsSsimMetric(ms_ssim), ("M",)),
        "PsnrMetricConfig.with_epsilon": (lambda: psnr, (1e-3,)),
        "SsimMetricConfig.with_k1_k2": (lambda: ssim, (0.02, 0.04)),
        "SsimMetricConfig.with_kernel_size": (lambda: ssim, (7,)),
        "SsimMetricConfig.with_sigma": (lambda: ssim, (2.0,)),
        "MsSsimMetricConfig.with_betas": (lambda: ms_ssim, ([0.5, 0.5],)),
        "MsSsimMetricConfig.with_channels": (lambda: ms_ssim, (1,)),
        "MsSsimMetricConfig.with_k1_k2": (lambda: ms_ssim, (0.02, 0.04)),
        "MsSsimMetricConfig.with_kernel_size": (lambda: ms_ssim, (7,)),
        "MsSsimMetricConfig.with_sigma": (lambda: ms_ssim, (2.0,)),
        "LearnerSummary.with_model": (lambda: LearnerSummary(1, SummaryMetrics([], [])), ("Mlp",)),
        "Transform2D.with_padding_mode": (Transform2D.identity, ("reflection",)),
        "DataLoader.slice": (_loader, (1, 3)),
        "DataLoader.shard": (_loader, (1, 2)),
        "DataLoader.to_device": (_loader, ("cpu:0",)),
        "SelectionDataset.slice": (lambda: _loader()._dataset, (1, 3)),
    }


def value_methods():
    """`Class.method` of every public method that returns its own type, `self`, or is a
    `with_*`/`without_*`, in burnish's source (the `*Builder` classes excepted: tested in
    tests/test_value_builder.py)."""
    builders = {cls.__name__ for cls in BUILDERS} | {"TrainingBuilder", "ValueBuilder"}
    builders |= {cls.__name__ for cls in TrainingBuilder.__mro__}  # its setters, by concern
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] in ("cli", "__main__.py"):
            continue
        for cls in (n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)):
            if cls.name in builders:
                continue
            own = {cls.name, "Self"} | {ast.unparse(b).split("[")[0] for b in cls.bases}
            for method in cls.body:
                if not isinstance(method, ast.FunctionDef) or method.name.startswith("_"):
                    continue
                decorators = {ast.unparse(d) for d in method.decorator_list}
                if decorators & {"classmethod", "staticmethod", "property"}:
                    continue
                returns = ast.unparse(method.returns).strip("'\"") if method.returns else ""
                returns_self = any(
                    isinstance(node, ast.Return)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                    for node in ast.walk(method)
                )
                if (
                    returns_self
                    or returns.split("[")[0] in own
                    or method.name.startswith(("with_", "without_"))
                ):
                    found.append(f"{cls.name}.{method.name}")
    return found


def _exempt(name):
    return name in NOT_VALUES or name.rpartition(".")[2] in NOT_VALUES


METHODS = [name for name in value_methods() if not _exempt(name)]


def state(value, seen=None):
    """`value`'s whole content, burnish objects' attributes included (compared by `==`)."""
    seen = set() if seen is None else seen
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, tuple(value.shape), value.detach().cpu().tolist())
    if isinstance(value, np.ndarray):
        return ("array", value.dtype, value.tolist())
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [state(item, seen) for item in value])
    if isinstance(value, dict):
        items = {key: state(item, seen) for key, item in value.items()}
        attributes = (
            state(vars(value), seen) if type(value).__module__.startswith("burnish") else None
        )
        return ("dict", items, attributes)
    if isinstance(value, (set, frozenset)):
        return set(value)
    if type(value).__module__.startswith("burnish") and id(value) not in seen:
        seen.add(id(value))
        slots = [s for c in type(value).__mro__ for s in getattr(c, "__slots__", ())]
        fields = dict(vars(value)) if hasattr(value, "__dict__") else {}
        fields |= {s: getattr(value, s) for s in slots if hasattr(value, s)}
        return (type(value).__name__, state(fields, seen))
    return value


def test_every_value_method_in_the_package_has_a_sample(tmp_path):
    missing = sorted(set(METHODS) - set(samples(tmp_path)))
    assert not missing, (
        f"{missing} return their own type (or self) but have no row in SAMPLES here: add one so "
        "the test checks that each returns a new object and leaves the old one as it was, or "
        "list the method in NOT_VALUES with the reason it is no builder."
    )
    assert len(METHODS) > 60  # the enumeration found the package's methods


@pytest.mark.parametrize("method", METHODS)
def test_a_method_returns_a_new_object_and_leaves_the_old_one_as_it_was(method, tmp_path):
    table = samples(tmp_path)
    if method not in table:
        pytest.fail(f"{method} has no row in SAMPLES")
    make, args = table[method]
    old = make()
    before = state(old)
    new = getattr(old, method.rpartition(".")[2])(*args)
    assert new is not old, f"{method} returned the object it was called on"
    assert state(old) == before, f"{method} changed the object it was called on"
    if type(new) is type(old):
        assert state(new) != before, f"{method} changed nothing"
    shared = (
        containers(vars(old), set()) & containers(vars(new), set())
        if hasattr(old, "__dict__")
        else set()
    )
    assert not shared, f"{method}: the two objects share a list, dict or set"


def test_a_stores_builder_used_twice_keeps_each_setting_where_asked(tmp_path):
    """The loader's case (item 8) with a store: a base store configured two ways."""
    model = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    base = SafetensorsStore.from_file(tmp_path / "m.safetensors")
    save_into(model, base.with_regex(r"^0\.").overwrite(True))
    with pytest.raises(RecordError, match="already exists"):
        save_into(model, base)  # `base` was never told to overwrite
    loaded = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    result = load_from(loaded, base.allow_partial())
    assert sorted(result.applied) == ["0.bias", "0.weight"]  # only the filtered save's
    with pytest.raises(RecordError, match="lacks 2 tensor"):
        load_from(loaded, base)  # `allow_partial` went to the other store


def test_a_metrics_copy_holds_the_state_it_had_and_accumulates_apart():
    from burnish.train.metric.accuracy import AccuracyInput

    metric = AccuracyMetric()
    outputs = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    metric.update(AccuracyInput(outputs, torch.tensor([1, 0, 0, 0])), None)  # 3 of 4
    padded = metric.with_pad_token(0)
    assert float(padded.value()) == float(metric.value()) == 75.0
    padded.update(AccuracyInput(outputs, torch.tensor([1, 1, 1, 1])), None)  # 2 of 4
    assert float(metric.value()) == 75.0  # the original accumulated nothing
    assert float(padded.value()) == 62.5
    assert padded.state is not metric.state


def test_an_optimizers_copy_steps_apart_from_the_original():
    """`with_grad_clipping` on a stepped optimizer: the copy's moments are its own."""
    adam = _stepped(AdamConfig().init())
    moments = {
        name: {k: v.clone() for k, v in s.items() if isinstance(v, torch.Tensor)}
        for name, s in adam._states.items()
    }
    clipped = adam.with_grad_clipping(GradientClippingConfig.norm(1.0))
    _stepped(clipped)
    assert adam.grad_clipping is None and clipped.grad_clipping is not None
    for name, tensors in moments.items():
        for key, value in tensors.items():
            assert torch.equal(adam._states[name][key], value), f"{name}.{key} changed"
    assert any(
        not torch.equal(clipped._states[name][key], value)
        for name, tensors in moments.items()
        for key, value in tensors.items()
    )


def test_a_module_optimizers_group_of_tensors_still_finds_them_after_the_copy():
    """ParamGroup.from_ids matches the model's tensors by identity: the copy keeps the group."""
    model = torch.nn.Linear(3, 2)
    base = ModuleOptimizer(SgdConfig())
    optim = base.with_group(ParamGroup.from_ids([model.bias]), SgdConfig())
    assert optim.routes(model) == {"weight": 0, "bias": 1}
    assert len(base.optimizers) == 1


def test_a_module_lr_schedulers_copy_steps_apart():
    scheduler = ModuleLrScheduler(_scheduler_stepped_twice())
    grouped = scheduler.with_group(ParamGroup.from_predicate("bias"), 0.01)
    first = [float(grouped.step()) for _ in range(3)]
    assert float(scheduler.step()) == first[0]  # the original's step count did not move
    assert len(scheduler.groups) == 1 and len(grouped.groups) == 2

"""Builders are values (issue 41, item 8): every setter of every builder returns a new builder
and leaves the one it was called on as it was, as Burn's consuming builders do.

The setters are enumerated from each class, so a new setter without a row in `SAMPLES` (or one
that changes the builder it is called on) fails here."""

from __future__ import annotations

import inspect
import io

import pytest
import torch

from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.record import CompactRecorder
from burnish.train import (
    Aggregate,
    ComposedCheckpointingStrategy,
    Direction,
    EvaluatorBuilder,
    ExecutionStrategy,
    Interrupter,
    KeepLastNCheckpoints,
    LearnerBuilder,
    MetricEarlyStoppingStrategy,
    StoppingCondition,
    SupervisedTraining,
    TrainingListener,
)
from burnish.train.logger import CsvLogger, InMemoryMetricLogger
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer
from burnish.train.settings.builder import TrainingBuilder
from burnish.value_builder import ValueBuilder

from tests.helpers import MnistBatcher, mnist

NOT_SETTERS = {"build", "launch", "interrupter"}  # they make or give something else


class Progress:
    """A progress logger by duck typing (training's and evaluation's methods)."""

    def update_split(self, items_processed):
        pass

    def update_test_progress(self, items_processed):
        pass


def training_samples(tmp_path):
    """Arguments for every setter `LearnerBuilder` and `SupervisedTraining` share."""
    recorder = CompactRecorder()
    stopping = MetricEarlyStoppingStrategy(
        LossMetric(), Aggregate.MEAN, Direction.LOWEST, "valid",
        StoppingCondition.no_improvement_since(2),
    )  # fmt: skip
    return {
        "metric_train_numeric": (LossMetric(),),
        "metric_valid_numeric": (LossMetric(),),
        "metric_train": (LossMetric(),),
        "metric_valid": (LossMetric(),),
        "metrics": (LossMetric(),),
        "metrics_text": (LossMetric(),),
        "num_epochs": (3,),
        "max_iterations": (10,),
        "valid_every": (5,),
        "devices": (["cpu"],),
        "with_training_strategy": (ExecutionStrategy.single("cpu"),),
        "gradient_checkpointing": (),
        "grads_accumulation": (2,),
        "with_interrupter": (Interrupter(),),
        "early_stopping": (stopping,),
        "deterministic": (),
        "compile": (),
        "mixed_precision": ("bf16",),
        "strategy": ("fsdp",),
        "with_ema": (0.9,),
        "on_non_finite": ("skip",),
        "with_file_checkpointer": (recorder,),
        "with_default_checkpointers": (),
        "with_custom_checkpointers": (recorder, recorder, recorder),
        "with_checkpointing_strategy": (KeepLastNCheckpoints(1),),
        "checkpoint": (2,),
        "resume": (),
        "checkpoint_every": (5,),
        "preemption": ([],),
        "renderer": (CliMetricsRenderer(file=io.StringIO()),),
        "with_progress_logger": (Progress(),),
        "with_metric_logger": (InMemoryMetricLogger(),),
        "log_to": (CsvLogger(tmp_path / "metrics.csv"),),
        "log_every": (3,),
        "with_listener": (TrainingListener(),),
        "with_application_logger": (None,),
        "summary": (),
        "profile": (range(3, 6),),
    }


def evaluator_samples(tmp_path):
    return {
        "metrics": (LossMetric(),),
        "metrics_text": (LossMetric(),),
        "metric_numeric": (LossMetric(),),
        "metric": (LossMetric(),),
        "renderer": (CliMetricsRenderer(file=io.StringIO()),),
        "with_progress_logger": (Progress(),),
        "with_metric_logger": (InMemoryMetricLogger(),),
        "with_application_logger": (None,),
        "with_interrupter": (Interrupter(),),
        "summary": (),
    }


def loader_samples(tmp_path):
    return {
        "batch_size": (4,),
        "shuffle": (0,),
        "num_workers": (1,),
        "set_device": ("cpu:0",),
        "prefetch_factor": (3,),
    }


def composed_samples(tmp_path):
    return {"add": (KeepLastNCheckpoints(2),)}


def seeded_builders(tmp_path):
    """Each builder class with settings in its lists already, and its samples."""
    full = CsvLogger(tmp_path / "seed.csv")

    def training(builder):
        return builder.metrics(AccuracyMetric()).with_listener(TrainingListener()).log_to(full)

    return {
        LearnerBuilder: (lambda: training(LearnerBuilder(tmp_path)), training_samples),
        SupervisedTraining: (
            lambda: training(SupervisedTraining(tmp_path, [1], [1])),
            training_samples,
        ),
        EvaluatorBuilder: (
            lambda: EvaluatorBuilder(tmp_path).metrics(AccuracyMetric()),
            evaluator_samples,
        ),
        DataLoaderBuilder: (lambda: DataLoaderBuilder(MnistBatcher()), loader_samples),
        ComposedCheckpointingStrategy.builder().__class__: (
            lambda: ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(1)),
            composed_samples,
        ),
    }


def setters(cls):
    return sorted(
        name
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_") and name not in NOT_SETTERS
    )


BUILDERS = (
    LearnerBuilder,
    SupervisedTraining,
    EvaluatorBuilder,
    DataLoaderBuilder,
    type(ComposedCheckpointingStrategy.builder()),
)
CASES = [(cls.__name__, name) for cls in BUILDERS for name in setters(cls)]


def state(value):
    """`value` with its lists, dicts and sets copied, other objects kept (compared by `==`)."""
    if isinstance(value, list):
        return [state(item) for item in value]
    if isinstance(value, dict):
        return {key: state(item) for key, item in value.items()}
    if isinstance(value, set):
        return set(value)
    return value


def containers(value, found):
    """The ids of every list, dict and set reachable from `value` through containers."""
    if isinstance(value, (list, dict, set)):
        found.add(id(value))
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            containers(item, found)
    return found


def test_every_builder_class_in_the_package_is_covered():
    """Every `*Builder` class burnish defines (and the two training builders) is tested here."""
    import burnish

    found = set()
    for module_name in _modules(burnish):
        module = __import__(module_name, fromlist=["_"])
        for name, member in vars(module).items():
            if (
                inspect.isclass(member)
                and name.endswith("Builder")
                and member.__module__ == module_name
            ):
                found.add(member)
    abstract = {ValueBuilder, TrainingBuilder}  # tested through their subclasses
    assert found - set(BUILDERS) - abstract == set()
    assert all(issubclass(cls, ValueBuilder) for cls in BUILDERS)


def _modules(package):
    import pkgutil

    return [
        info.name
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
        if not info.name.startswith(("burnish.cli", "burnish.__main__"))
    ]


@pytest.mark.parametrize(("builder_name", "setter"), CASES)
def test_a_setter_returns_a_new_builder_and_leaves_the_old_one_as_it_was(
    builder_name, setter, tmp_path, monkeypatch
):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic() sets it
    [(make, samples)] = [
        v for k, v in seeded_builders(tmp_path).items() if k.__name__ == builder_name
    ]
    table = samples(tmp_path)
    assert setter in table, (
        f"{builder_name}.{setter} has no sample arguments here: add a row to the samples so "
        "the test checks that it returns a new builder and leaves the old one as it was."
    )
    old = make()
    before = state(vars(old))
    new = getattr(old, setter)(*table[setter])
    assert type(new) is type(old)
    assert new is not old
    assert state(vars(old)) == before, (
        f"{builder_name}.{setter} changed the builder it was called on"
    )
    assert state(vars(new)) != before, f"{builder_name}.{setter} changed nothing"
    shared = containers(vars(old), set()) & containers(vars(new), set())
    assert not shared, f"{builder_name}.{setter}: the two builders share a list, dict or set"


def test_the_new_builders_lists_are_its_own(tmp_path):
    base = LearnerBuilder(tmp_path).metrics(AccuracyMetric())
    first = base.metric_train_numeric(LossMetric())
    second = base.with_listener(TrainingListener()).metric_valid_numeric(LossMetric())
    names = {
        label: {split: [m.name for m in ms] for split, ms in builder._settings.metrics.items()}
        for label, builder in (("base", base), ("first", first), ("second", second))
    }
    assert names["base"] == {"train": ["Accuracy"], "valid": ["Accuracy"]}
    assert names["first"] == {"train": ["Accuracy", "Loss"], "valid": ["Accuracy"]}
    assert names["second"] == {"train": ["Accuracy"], "valid": ["Accuracy", "Loss"]}
    assert tuple(len(b._settings.listeners) for b in (base, first, second)) == (0, 0, 1)


def test_a_refused_setting_leaves_the_builder_usable(tmp_path):
    base = LearnerBuilder(tmp_path).metrics(AccuracyMetric(), LossMetric())
    with pytest.raises(ValueError, match="already registered"):
        base.metrics(LossMetric())  # Loss is registered: the whole call is refused
    assert [m.name for m in base._settings.metrics["train"]] == ["Accuracy", "Loss"]


def test_the_interrupter_is_the_runs_whatever_builder_it_came_from(tmp_path):
    base = LearnerBuilder(tmp_path)
    stop = base.interrupter()
    assert base.num_epochs(2).summary().interrupter() is stop


def test_a_loader_builder_used_twice_shuffles_only_where_asked():
    """The issue's case: `loader.shuffle(0).build(train)` then `loader.build(valid)`."""
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(8)
    train = loader.shuffle(0).build(PartialDataset(mnist("train"), 0, 32))
    valid = loader.build(PartialDataset(mnist("test"), 0, 32))
    assert (train.seed, valid.seed) == (0, None)
    labels = torch.cat([batch.targets for batch in valid.iter()])
    expected = torch.tensor([mnist("test").get(i).label for i in range(32)])
    assert torch.equal(labels.cpu(), expected)

"""The LearnerBuilder methods of API.md §7 beyond the seeds: loaders given to `build` then
`fit()`, text metrics (`metric_train`/`metric_valid`, logged as Burn logs them),
`with_interrupter`, `with_metric_logger` and `with_application_logger`, each through a real run
on an MNIST subset."""

from __future__ import annotations

import logging

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train import LearnerBuilder
from burnish.train.interrupter import Interrupter
from burnish.train.logger import (
    FileApplicationLoggerInstaller,
    FileMetricLogger,
    InMemoryMetricLogger,
)
from burnish.train.metric import LossMetric
from burnish.train.metric.base import Metric, MetricEntry
from burnish.train.metric.store import Aggregate, MetricStore
from burnish.train.renderer import MetricsRenderer

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, builder, loaders

# 128 training images in batches of 64: 2 iterations; 64 validation images: 1 iteration.
SMALL = {"train_items": 128, "valid_items": 64}
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class RecordingRenderer(MetricsRenderer):
    """Always due; keeps every snapshot and every `end_epoch` call."""

    def __init__(self) -> None:
        self.snapshots = []
        self.epochs = []

    def start(self, num_epochs, interrupter):
        pass

    def due(self):
        return True

    def render(self, snapshot):
        self.snapshots.append(snapshot)

    def end_epoch(self, split, epoch, values):
        self.epochs.append((split, epoch, dict(values)))

    def close(self):
        pass


class ItemsSeen(Metric):
    """A text metric: how many items of the epoch were seen, as `"<n> items"`."""

    name = "Items Seen"

    def __init__(self) -> None:
        self.items = 0
        self.cleared = 0

    def update(self, item, metadata):
        self.items += item.targets.shape[0]
        text = f"{self.items} items"
        return MetricEntry(self.name, text, text)

    def clear(self):
        self.items = 0
        self.cleared += 1


def parameters(model):
    return {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}


def test_build_with_loaders_then_fit_without_arguments_trains_on_them(tmp_path):
    bn.seed(1)
    model = Mlp()
    before = parameters(model)
    train, valid = loaders(**SMALL)
    learner = builder(tmp_path, epochs=1).build(model, AdamConfig().init(), 1e-3, train, valid)
    result = learner.fit()

    assert result.epochs_completed == 1 and not result.interrupted
    assert learner.model() is model and not result.model.training  # Burn: `.valid()`
    for split, iterations in (("train", 2), ("valid", 1)):
        lines = iteration_lines(tmp_path / split / "epoch-1" / "Loss.log")
        assert len(lines) == iterations
    changed = [
        name for name, tensor in parameters(model).items() if not torch.equal(tensor, before[name])
    ]
    assert sorted(changed) == sorted(before)

    # Loaders given to `fit` take the place of those given to `build`: 3 train iterations.
    bn.seed(1)
    override = builder(tmp_path / "override", epochs=1).build(
        Mlp(), AdamConfig().init(), 1e-3, train, valid
    )
    bigger, _ = loaders(train_items=192, valid_items=64)
    override.fit(bigger)
    lines = iteration_lines(tmp_path / "override/train/epoch-1/Loss.log")
    assert [int(line.split(",")[1]) for line in lines] == [64, 64, 64]


def test_fit_without_loaders_anywhere_raises(tmp_path):
    train, _ = loaders(**SMALL)
    message = r"`fit` needs a train data loader"
    learner = builder(tmp_path, epochs=1).build(Mlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(ValueError, match=message):
        learner.fit()
    assert not (tmp_path / "train").exists()  # nothing ran
    only_train = builder(tmp_path, epochs=1).build(Mlp(), AdamConfig().init(), 1e-3, train)
    assert only_train.fit().validations == 0  # no valid loader anywhere: no validation
    assert not (tmp_path / "valid").exists()


def test_text_metrics_are_shown_and_logged_but_read_by_no_numeric_consumer(tmp_path):
    bn.seed(1)
    renderer = RecordingRenderer()
    train_text, valid_text = ItemsSeen(), ItemsSeen()
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train(train_text)
        .metric_valid(valid_text)
        .renderer(renderer)
        .num_epochs(1)
        .summary()
        .build(Mlp(), AdamConfig().init(), 1e-3)
    )
    result = learner.fit(*loaders(**SMALL))

    shown = [(s.split, s.progress.iteration, s.text) for s in renderer.snapshots]
    assert ("train", 1, {"Items Seen": "64 items"}) in shown
    assert ("train", 2, {"Items Seen": "128 items"}) in shown
    assert ("valid", 1, {"Items Seen": "64 items"}) in shown
    assert all("Items Seen" not in s.numeric and "Loss" in s.numeric for s in renderer.snapshots)
    # The epoch values given to the renderer are the numeric metrics' only.
    assert [(split, values.keys()) for split, _, values in renderer.epochs] == [
        ("train", {"Loss"}),
        ("valid", {"Loss"}),
    ]
    # As in Burn, the text metric's entries are logged, one line each, beside the numeric ones;
    # the epoch's aggregates hold the numeric metrics only.
    for split, lines in (("train", ["64 items", "128 items"]), ("valid", ["64 items"])):
        directory = tmp_path / split / "epoch-1"
        names = sorted(p.name for p in directory.iterdir())
        assert names == ["Items_Seen.log", "Loss.log", "aggregates.json"]
        assert (directory / "Items_Seen.log").read_text().splitlines() == lines
        assert list(FileMetricLogger(tmp_path / split).read_aggregates(1) or {}) == ["Loss"]
    # Numeric readers refuse it by name, and the summary leaves it out.
    store = MetricStore.from_dir(tmp_path)
    with pytest.raises(ValueError, match="not a numeric entry"):
        store.find_metric("Items Seen", 1, Aggregate.MEAN, "train")
    assert store.find_metric("Loss", 1, Aggregate.MEAN, "train") is not None
    assert [m.name for m in result.summary.metrics.train] == ["Loss"]
    # Each epoch of each split ends with a `clear`, so the next epoch counts from zero.
    assert (train_text.cleared, valid_text.cleared) == (1, 1)

    with pytest.raises(TypeError, match=r"ItemsSeen is not one.*`metric_train\(\.\.\.\)`"):
        LearnerBuilder(tmp_path).metric_train_numeric(ItemsSeen())


class StopAfter(Mlp):
    """Asks `interrupter` to stop from inside its `at`-th `train_step`."""

    def __init__(self, interrupter, at):
        super().__init__()
        self.interrupter, self.at, self.steps = interrupter, at, 0

    def train_step(self, batch):
        self.steps += 1
        if self.steps == self.at:
            self.interrupter.stop("stop from train_step")
        return super().train_step(batch)


def test_with_interrupter_stop_from_a_train_step_ends_the_run(tmp_path):
    bn.seed(1)
    interrupter = Interrupter()
    model = StopAfter(interrupter, at=3)
    renderer = RecordingRenderer()  # always due: each iteration's entries are logged at once
    b = builder(tmp_path, epochs=2).renderer(renderer).with_interrupter(interrupter)
    assert b.interrupter() is interrupter
    result = b.build(model, AdamConfig().init(), 1e-3).fit(*loaders(batch_size=16, **SMALL))

    assert result.interrupted and result.epochs_completed == 0 and not result.stopped_early
    assert model.steps == 3  # the iteration that asked finishes; no further step runs
    assert [(s.split, s.progress.iteration) for s in renderer.snapshots] == [
        ("train", 1),
        ("train", 2),
        ("train", 3),
    ]  # of the 8 iterations of an epoch; no validation
    assert renderer.epochs == []  # no epoch ended
    lines = iteration_lines(tmp_path / "train/epoch-1/Loss.log")
    assert len(lines) == 3
    assert not (tmp_path / "valid").exists()
    log_text = (tmp_path / "experiment.log").read_text()
    assert "Training interrupted: stop from train_step" in log_text


def test_an_interrupted_run_without_a_checkpointer_keeps_the_lines_of_its_iterations(tmp_path):
    """The CLI renderer is not due within 3 iterations, so their entries are still pending
    at the stop: they are written all the same (no checkpoint flushes them here)."""
    bn.seed(1)
    interrupter = Interrupter()
    model = StopAfter(interrupter, at=3)
    b = builder(tmp_path, epochs=2).with_interrupter(interrupter)  # CliMetricsRenderer
    result = b.build(model, AdamConfig().init(), 1e-3).fit(*loaders(batch_size=16, **SMALL))
    assert result.interrupted
    assert len(iteration_lines(tmp_path / "train/epoch-1/Loss.log")) == 3


def test_summary_and_trackers_with_loggers_that_write_no_files(tmp_path):
    """`summary()` reads the file logs: with `with_metric_logger` there are none, so the run
    ends without a summary instead of failing, and the trackers still finish."""
    from burnish.train.logger import CsvLogger

    bn.seed(1)
    learner = (
        builder(tmp_path, epochs=1)
        .renderer(RecordingRenderer())
        .with_metric_logger(InMemoryMetricLogger(), InMemoryMetricLogger())
        .summary()
        .log_to(CsvLogger(tmp_path / "metrics.csv"))
        .build(Mlp(), AdamConfig().init(), 1e-3)
    )
    result = learner.fit(*loaders(**SMALL))
    assert result.epochs_completed == 1 and result.summary is None
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert any(row.startswith("1,,valid,Loss,") for row in rows)
    assert "No summary" in (tmp_path / "experiment.log").read_text()


def test_with_metric_logger_replaces_the_file_logs(tmp_path):
    bn.seed(1)
    train_logger, valid_logger = InMemoryMetricLogger(), InMemoryMetricLogger()
    renderer = RecordingRenderer()
    learner = (
        builder(tmp_path, epochs=1)
        .renderer(renderer)
        .with_metric_logger(train_logger, valid_logger)
        .build(Mlp(), AdamConfig().init(), 1e-3)
    )
    result = learner.fit(*loaders(**SMALL))

    assert result.epochs_completed == 1
    assert set(train_logger.values) == set(valid_logger.values) == {"Accuracy", "Loss"}
    for logger, iterations, counts in ((train_logger, 2, [64, 64]), (valid_logger, 1, [64])):
        for name in ("Accuracy", "Loss"):
            assert list(logger.values[name]) == [1]
            entries = logger.read_numeric(name, 1)
            assert len(entries) == iterations
            assert [entry.count for entry in entries] == counts
    # The epoch values the renderer got are the means of what the given loggers hold.
    for split, logger in (("train", train_logger), ("valid", valid_logger)):
        [values] = [v for s, _, v in renderer.epochs if s == split]
        entries = logger.read_numeric("Loss", 1)
        mean = sum(e.value * e.count for e in entries) / sum(e.count for e in entries)
        assert values["Loss"] == pytest.approx(mean, rel=1e-12)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [".burnish.lock", "experiment.log"]  # no train/ valid/


def root_handlers_during_fit(tmp_path, configure):
    """Fit one small epoch; return the root logger's handlers as the first train_step saw them."""
    seen = []

    class Spy(Mlp):
        def train_step(self, batch):
            if not seen:
                seen.append(list(logging.getLogger().handlers))
            return super().train_step(batch)

    bn.seed(1)
    learner = configure(builder(tmp_path, epochs=1)).build(Spy(), AdamConfig().init(), 1e-3)
    learner.fit(*loaders(**SMALL))
    return seen[0]


def test_default_application_logger_writes_experiment_log(tmp_path):
    before = list(logging.getLogger().handlers)
    during = root_handlers_during_fit(tmp_path, lambda b: b)
    added = [h for h in during if h not in before]
    assert [type(h) for h in added] == [logging.FileHandler]
    assert "Model summary:" in (tmp_path / "experiment.log").read_text()
    assert logging.getLogger().handlers == before  # removed when fit ends


def test_custom_application_logger_writes_its_file_not_experiment_log(tmp_path):
    elsewhere = tmp_path / "logs" / "run.log"
    installer = FileApplicationLoggerInstaller(elsewhere)
    root_handlers_during_fit(tmp_path / "run", lambda b: b.with_application_logger(installer))
    text = elsewhere.read_text()
    assert "Model summary:" in text and "INFO burnish.train:" in text
    assert not (tmp_path / "run" / "experiment.log").exists()
    assert (tmp_path / "run" / "train" / "epoch-1" / "Loss.log").is_file()
    assert not installer.installed  # uninstalled when fit ends


def test_no_application_logger_leaves_logging_alone(tmp_path):
    before = list(logging.getLogger().handlers)
    burnish_level = logging.getLogger("burnish").level
    during = root_handlers_during_fit(tmp_path, lambda b: b.with_application_logger(None))
    assert during == before
    assert logging.getLogger("burnish").level == burnish_level
    assert not (tmp_path / "experiment.log").exists()
    assert (tmp_path / "train" / "epoch-1" / "Loss.log").is_file()

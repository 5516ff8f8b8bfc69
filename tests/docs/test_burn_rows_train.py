"""docs/burn.md, Training and the metric/checkpoint/early-stopping tables: the rows that say
"same", each run as Burn's idiom on a tiny MNIST learner."""

from __future__ import annotations

import logging

import pytest

from burnish.optim import SgdConfig
from burnish.record import CompactRecorder
from burnish.train import (
    Aggregate,
    ComposedCheckpointingStrategy,
    Direction,
    EvaluatorBuilder,
    KeepLastNCheckpoints,
    LearnerBuilder,
    LearnerSummary,
    MetricCheckpointingStrategy,
    MetricEarlyStoppingStrategy,
    Split,
    StoppingCondition,
)
from burnish.train.logger import FileApplicationLoggerInstaller, InMemoryMetricLogger
from burnish.train.metric import AccuracyMetric, LossMetric, Metric, MetricEntry
from burnish.train.renderer import CliMetricsRenderer, MetricsRenderer

from tests.docs.burn_rows import row
from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, loaders


def tiny_loaders():
    return loaders(batch_size=32, train_items=128, valid_items=64)  # 4 and 2 iterations


def checkpoints(artifact_dir) -> list[str]:
    return sorted(p.name for p in (artifact_dir / "checkpoint").iterdir() if p.name[0] != ".")


class BatchSizes(Metric):
    """A text metric (Burn's `Metric` without `Numeric`): the batch size, as text."""

    name = "BatchSizes"

    def update(self, item, metadata):
        size = len(item.targets)
        return MetricEntry(self.name, f"batch of {size}", str(size))

    def clear(self):
        pass


@row(
    ".metric_train_numeric(AccuracyMetric::new()), .metric_valid_numeric(...), "
    ".metric_train(...), .metric_valid(...)"
)
def test_metric_registration_logs_each_split(tmp_path):
    train, valid = tiny_loaders()
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .metric_train(BatchSizes())
        .metric_valid(BatchSizes())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(Mlp(), SgdConfig().init(), 0.05)
    )
    learner.fit(train, valid)
    for split, iterations in (("train", 4), ("valid", 2)):
        folder = tmp_path / split / "epoch-1"
        lines = iteration_lines(folder / "Accuracy.log")
        values = [float(line.split(",")[0]) for line in lines[:iterations]]
        assert len(values) == iterations and all(0.0 <= v <= 100.0 for v in values)
        assert (folder / "Loss.log").exists()
        assert iteration_lines(folder / "BatchSizes.log")[:iterations] == ["32"] * iterations


@row(".num_epochs(n), .grads_accumulation(n), .summary()")
def test_num_epochs_accumulation_and_summary(tmp_path, capsys):
    train, valid = tiny_loaders()
    optim = SgdConfig().init()
    stepped = []
    original = optim.step

    def step(lr, model, grads):
        stepped.append(lr)
        return original(lr, model, grads)

    optim.step = step
    learner = (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .grads_accumulation(2)
        .summary()
        .build(Mlp(), optim, 0.05)
    )
    result = learner.fit(train, valid)
    assert result.epochs_completed == 2
    assert len(stepped) == 2 * 4 // 2  # one optimizer step per 2 iterations
    out = capsys.readouterr().out
    assert "Valid" in out and "Loss" in out  # Burn's summary table, printed at the end


@row(".with_checkpointing_strategy(s), .early_stopping(s)")
@row("KeepLastNCheckpoints::new(n)")
@row(
    "MetricEarlyStoppingStrategy::new(&LossMetric::new(), Aggregate::Mean, Direction::Lowest, "
    "Split::Valid, StoppingCondition::NoImprovementSince { n_epochs: 1 })"
)
def test_keep_last_checkpoints_and_early_stopping(tmp_path):
    train, valid = tiny_loaders()
    learner = (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .with_file_checkpointer(CompactRecorder())
        .with_checkpointing_strategy(KeepLastNCheckpoints(1))
        .early_stopping(
            MetricEarlyStoppingStrategy(
                LossMetric(),
                Aggregate.MEAN,
                Direction.LOWEST,
                Split.VALID,
                StoppingCondition.no_improvement_since(n_epochs=1),
            )
        )
        .renderer(CliMetricsRenderer())
        .num_epochs(5)
        .build(Mlp(), SgdConfig().init(), 0.0)  # lr 0: the valid loss never improves
    )
    result = learner.fit(train, valid)
    # Epoch 1 is the best; epoch 2 is one epoch without improvement: Burn stops there.
    assert result.epochs_completed == 2 and result.stopped_early
    assert checkpoints(tmp_path) == ["epoch-2"]  # the last one kept


@row(
    "MetricCheckpointingStrategy::new(&LossMetric::new(), Aggregate::Mean, Direction::Lowest, "
    "Split::Valid)"
)
@row("ComposedCheckpointingStrategy::builder().add(..).build()")
def test_metric_and_composed_checkpointing_strategies(tmp_path):
    def run(directory, strategy, lr, epochs):
        train, valid = tiny_loaders()
        learner = (
            LearnerBuilder(directory)
            .metric_valid_numeric(LossMetric())
            .with_file_checkpointer(CompactRecorder())
            .with_checkpointing_strategy(strategy)
            .renderer(CliMetricsRenderer())
            .num_epochs(epochs)
            .build(Mlp(), SgdConfig().init(), lr)
        )
        learner.fit(train, valid)
        return checkpoints(directory)

    def best():
        return MetricCheckpointingStrategy(
            LossMetric(), Aggregate.MEAN, Direction.LOWEST, Split.VALID
        )

    # lr 0: every epoch's valid loss ties with epoch 1's, which stays the best (Burn's
    # `find_epoch` takes the first of equal values): epochs 2 and 3 are not kept. burnish also
    # keeps the run's last epoch, which records how the run ended (docs/crash-safety.md);
    # Burn would keep epoch 1 alone.
    assert run(tmp_path / "best", best(), 0.0, 4) == ["epoch-1", "epoch-4"]
    composed = ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(2)).add(best())
    # Burn's composition keeps what any of its strategies keeps: the best, and the last two.
    assert run(tmp_path / "composed", composed.build(), 0.0, 4) == [
        "epoch-1",
        "epoch-3",
        "epoch-4",
    ]


class Recording(CliMetricsRenderer):
    """Burn's renderer, remembering the epochs it ended; stops training after the first."""

    def __init__(self) -> None:
        super().__init__()
        self.ended: list[tuple[str, int]] = []
        self.interrupter = None

    def start(self, num_epochs, interrupter):
        self.interrupter = interrupter
        return super().start(num_epochs, interrupter)

    def end_epoch(self, split, epoch, values):
        self.ended.append((str(getattr(split, "value", split)), epoch))
        if str(getattr(split, "value", split)).lower() == "valid":
            self.interrupter.stop("enough")
        return super().end_epoch(split, epoch, values)


@row(
    ".interrupter(), .with_interrupter(i), .renderer(r), .with_metric_logger(..), "
    ".with_application_logger(..)"
)
def test_interrupter_renderer_metric_logger_application_logger(tmp_path):
    train, valid = tiny_loaders()
    renderer, metrics = Recording(), InMemoryMetricLogger()
    builder = LearnerBuilder(tmp_path)
    interrupter = builder.interrupter()
    log_file = tmp_path / "app.log"
    learner = (
        builder.with_interrupter(interrupter)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(renderer)
        .with_metric_logger(metrics)
        .with_application_logger(FileApplicationLoggerInstaller(log_file))
        .num_epochs(3)
        .build(Mlp(), SgdConfig().init(), 0.05)
    )
    handlers = list(logging.getLogger().handlers)
    result = learner.fit(train, valid)
    assert logging.getLogger().handlers == handlers  # installed for the run, then removed
    assert renderer.interrupter is interrupter
    assert result.interrupted and result.epochs_completed == 1
    assert interrupter.get_message() == "enough"
    assert [epoch for _, epoch in renderer.ended] == [1, 1]  # train and valid of epoch 1
    assert len(metrics.read_numeric("Loss", 1, "train")) >= 4
    assert len(metrics.read_numeric("Loss", 1, "valid")) >= 2
    assert not (tmp_path / "train" / "epoch-1" / "Loss.log").exists()  # replaced the files
    assert "interrupted" in log_file.read_text()


@row("the summary's Test (<name>) rows")
@row("LearnerSummary")
def test_learner_summary_has_train_valid_and_test_rows(tmp_path):
    train, valid = tiny_loaders()
    model = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(2)
        .build(Mlp(), SgdConfig().init(), 0.05)
        .fit(train, valid)
        .model
    )
    evaluator = (
        EvaluatorBuilder(tmp_path)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(CliMetricsRenderer())
        .summary()
        .build(model)
    )
    evaluator.eval("MNIST test", valid)
    summary = LearnerSummary.from_dir(tmp_path)
    text = str(summary)
    for split in ("Train", "Valid", "Test (mnist-test)"):
        assert split in text
    assert summary.epochs == 2
    losses = iteration_lines(tmp_path / "test" / "mnist-test" / "Loss.log")
    assert len(losses) >= 2


@row("AsyncCheckpointer::new(FileCheckpointer::new(..)) (what with_file_checkpointer builds)")
def test_file_checkpointer_writes_in_the_background(tmp_path):
    import threading

    from burnish.train.checkpoint import AsyncCheckpointer

    writer, threads = AsyncCheckpointer(), []
    writer.submit("epoch-1", lambda: threads.append(threading.current_thread()))
    writer.wait()
    assert threads and threads[0] is not threading.current_thread()  # off the loop's thread
    train, valid = tiny_loaders()
    (
        LearnerBuilder(tmp_path)
        .with_file_checkpointer(CompactRecorder())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(Mlp(), SgdConfig().init(), 0.05)
        .fit(train, valid)
    )
    epoch = tmp_path / "checkpoint" / "epoch-1"
    names = {path.name.split(".")[0] for path in epoch.iterdir()}
    assert {"model", "optim", "scheduler", "COMMIT"} <= names  # Burn's three records, committed


@row("TuiMetricsRenderer, CliMetricsRenderer")
def test_renderers(tmp_path, capsys):
    from burnish.train.renderer import TuiMetricsRenderer

    assert issubclass(TuiMetricsRenderer, MetricsRenderer)
    assert issubclass(CliMetricsRenderer, MetricsRenderer)
    with pytest.raises(TypeError):
        LearnerBuilder(tmp_path).renderer(object())  # neither a renderer nor Burn's traits
    train, valid = tiny_loaders()
    (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(Mlp(), SgdConfig().init(), 0.05)
        .fit(train, valid)
    )
    assert "[valid] epoch 1/1" in capsys.readouterr().out


@row("FileMetricLogger, InMemoryMetricLogger")
def test_file_and_in_memory_metric_loggers(tmp_path):
    from burnish.train.logger import FileMetricLogger
    from burnish.train.metric import NumericEntry

    for logger in (FileMetricLogger(tmp_path / "train"), InMemoryMetricLogger()):
        logger.log("Loss", 1, [NumericEntry(0.5, 32), NumericEntry(0.25, 32)])
        logger.end_epoch(1)
        logger.log("Loss", 2, [NumericEntry(0.125, 16)])
        logger.end_epoch(2)
        assert [e.value for e in logger.read_numeric("Loss", 1)] == [0.5, 0.25]
        assert [e.value for e in logger.read_numeric("Loss", 2)] == [0.125]
    assert (tmp_path / "train" / "epoch-1" / "Loss.log").exists()  # Burn's layout
    evaluation = FileMetricLogger.new_eval(tmp_path / "test" / "mnist")
    evaluation.log("Loss", 1, [NumericEntry(0.5, 8)])
    evaluation.end_epoch(1)
    assert (tmp_path / "test" / "mnist" / "Loss.log").exists()  # no epoch directory


@row(".with_warmup_epochs(Some(3)), .warmup_epochs()")
def test_early_stopping_waits_for_the_warmup_epochs(tmp_path):
    train, valid = tiny_loaders()
    strategy = MetricEarlyStoppingStrategy(
        LossMetric(),
        Aggregate.MEAN,
        Direction.LOWEST,
        Split.VALID,
        StoppingCondition.no_improvement_since(n_epochs=1),
    ).with_warmup_epochs(3)
    assert strategy.warmup_epochs() == 3
    result = (
        LearnerBuilder(tmp_path)
        .metric_valid_numeric(LossMetric())
        .early_stopping(strategy)
        .renderer(CliMetricsRenderer())
        .num_epochs(6)
        .build(Mlp(), SgdConfig().init(), 0.0)  # lr 0: no epoch improves on epoch 1
        .fit(train, valid)
    )
    # Burn never stops during epochs 1..=3, and stops at 4 (4 - best epoch 1 >= 1).
    assert result.epochs_completed == 4 and result.stopped_early


@row("<Metric>.log: a value,count line per iteration (NumericEntry::Aggregated)")
def test_metric_logs_have_burns_lines(tmp_path):
    train, valid = tiny_loaders()
    (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(Mlp(), SgdConfig().init(), 0.05)
        .fit(train, valid)
    )
    lines = (tmp_path / "train" / "epoch-1" / "Loss.log").read_text().splitlines()
    iterations = [line.split(",") for line in lines[:-1]]
    assert len(iterations) == 4 and all(count == "32" for _, count in iterations)
    value, final = lines[-1].split(",")
    assert final == "final"  # Burn main's NumericEntry::Final ends the epoch
    mean = sum(float(v) * int(n) for v, n in iterations) / 128
    assert float(value) == pytest.approx(mean, rel=1e-6)  # the epoch's count-weighted mean

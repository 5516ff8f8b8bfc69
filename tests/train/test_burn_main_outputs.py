"""Burn main's outputs of a run, ported verbatim (issue 39, item 6): `with_metric_logger` with
one logger, a renderer written to Burn's `MetricsRenderer` traits (the port of Burn's
`examples/custom-renderer`), `with_progress_logger` on the training and the evaluator builders,
and `manual_close` after `eval_all`. Real runs on an MNIST subset."""

from __future__ import annotations

import pytest

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train import EvaluatorBuilder, Learner, SupervisedTraining
from burnish.train.logger import (
    EvaluationProgressLogger,
    FileMetricLogger,
    InMemoryMetricLogger,
    TrainingProgressLogger,
)
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import (
    CliMetricsRenderer,
    EvaluationName,
    MetricDefinition,
    MetricsRenderer,
    MetricsRendererEvaluation,
    MetricsRendererTraining,
    MetricState,
)
from burnish.train.split import Split

from tests.train.helpers import Mlp, loaders

# 128 training images in batches of 64: 2 iterations; 64 validation images: 1 iteration.
SMALL = {"train_items": 128, "valid_items": 64}
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def training(artifact_dir) -> SupervisedTraining:
    dataloader_train, dataloader_test = loaders(**SMALL)
    return (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_test)
        .metrics(AccuracyMetric(), LossMetric())
        .num_epochs(2)
    )


# -- with_metric_logger(logger): Burn main's one logger -----------------------------------------


def test_with_metric_logger_takes_one_in_memory_logger_as_burn_main(tmp_path):
    bn.seed(1)
    logger = InMemoryMetricLogger()
    result = (
        training(tmp_path)
        .renderer(CliMetricsRenderer())
        .with_metric_logger(logger)
        .launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    )
    assert result.epochs_completed == 2
    for epoch in (1, 2):  # Burn's `read_numeric(name, epoch, split)`
        train = logger.read_numeric("Loss", epoch, Split.TRAIN)
        valid = logger.read_numeric("Loss", epoch, "valid")
        assert [entry.count for entry in train] == [64, 64]
        assert [entry.count for entry in valid] == [64]
    assert set(logger.splits) == {"train", "valid"}
    assert not (tmp_path / "train").exists()  # the logger replaces the file logs


def test_with_metric_logger_file_logger_of_the_artifact_dir_writes_burns_layout(tmp_path):
    bn.seed(1)
    logs = tmp_path / "logs"
    (
        training(tmp_path)
        .renderer(CliMetricsRenderer())
        .with_metric_logger(FileMetricLogger(logs))  # Burn: FileMetricLogger::new(dir)
        .launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    )
    logger = FileMetricLogger(logs / "train")  # read back through the format's own reader
    assert [entry.count for entry in logger.read_numeric("Loss", 2)] == [64, 64]
    assert [e.count for e in FileMetricLogger(logs / "valid").read_numeric("Accuracy", 1)] == [64]


def test_with_metric_logger_rejects_what_is_not_a_metric_logger(tmp_path):
    with pytest.raises(TypeError, match=r"takes burnish.train.logger.MetricLogger.*Received: str"):
        training(tmp_path).with_metric_logger("logs")


# -- a renderer written to Burn's traits (examples/custom-renderer) -----------------------------


class CustomRenderer(
    MetricsRendererTraining,
    TrainingProgressLogger,
    MetricsRenderer,
    MetricsRendererEvaluation,
    EvaluationProgressLogger,
):
    """Burn's `CustomRenderer`, recording each call instead of `dbg!`."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.states: list[tuple[str, MetricState]] = []

    def update_train(self, state: MetricState) -> None:
        self.states.append(("train", state))

    def update_valid(self, state: MetricState) -> None:
        self.states.append(("valid", state))

    def start(self, total_epochs, starting_epoch, total_items) -> None:
        self.calls.append(("start", total_epochs, starting_epoch, total_items))

    def update_epoch(self, epoch) -> None:
        self.calls.append(("update_epoch", epoch))

    def start_split(self, split, total_items) -> None:
        self.calls.append(("start_split", split, total_items))

    def update_split(self, items_processed) -> None:
        self.calls.append(("update_split", items_processed))

    def end_split(self) -> None:
        self.calls.append(("end_split",))

    def end(self) -> None:
        self.calls.append(("end",))

    def log_event_training(self, event) -> None:
        self.calls.append(("event", event))

    def manual_close(self) -> None:
        self.calls.append(("manual_close",))

    def register_metric(self, definition: MetricDefinition) -> None:
        self.calls.append(("register_metric", definition.name))

    def update_test(self, name: EvaluationName, state: MetricState) -> None:
        self.states.append((name.as_str(), state))

    def start_global_progress(self, total_tests) -> None:
        self.calls.append(("start_global_progress", total_tests))

    def start_test(self, name, total_items) -> None:
        self.calls.append(("start_test", name, total_items))

    def update_test_progress(self, items_processed) -> None:
        self.calls.append(("update_test_progress", items_processed))

    def end_test(self) -> None:
        self.calls.append(("end_test",))

    def end_global_progress(self) -> None:
        self.calls.append(("end_global_progress",))

    def log_event_evaluation(self, event) -> None:
        self.calls.append(("event", event))


def lifecycle(calls: list[tuple]) -> list[tuple]:
    """The calls that are not per-batch (updates, events, registrations)."""
    skipped = {"update_split", "update_test_progress", "event", "register_metric"}
    return [call for call in calls if call[0] not in skipped]


def test_a_renderer_written_to_burns_traits_sees_burns_call_sequence(tmp_path):
    bn.seed(1)
    renderer = CustomRenderer()
    result = (
        training(tmp_path)
        .renderer(renderer)
        .with_application_logger(None)
        .launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    )
    assert result.epochs_completed == 2
    assert lifecycle(renderer.calls) == [
        ("start", 2, 1, None),
        ("start_split", "train", 128), ("end_split",),
        ("start_split", "valid", 64), ("end_split",), ("update_epoch", 1),
        ("start_split", "train", 128), ("end_split",),
        ("start_split", "valid", 64), ("end_split",), ("update_epoch", 2),
        ("end",),
    ]  # fmt: skip
    registered = {call[1] for call in renderer.calls if call[0] == "register_metric"}
    assert registered == {"Accuracy", "Loss"}
    updates = [call[1] for call in renderer.calls if call[0] == "update_split"]
    assert updates and set(updates) <= {64, 128}  # items processed, at the renderer's pace
    losses = [s for split, s in renderer.states if split == "valid" and s.entry.name == "Loss"]
    assert losses and all(s.is_numeric and s.numeric.value > 0 for s in losses)


def test_a_burn_renderer_follows_an_evaluation_and_manual_close_reaches_it(tmp_path):
    bn.seed(1)
    renderer = CustomRenderer()
    _, dataloader_test = loaders(**SMALL)
    results = (
        EvaluatorBuilder(tmp_path)
        .renderer(renderer)
        .metrics(AccuracyMetric(), LossMetric())
        .build(Mlp())
        .eval_all([("Plain", dataloader_test), ("Again", dataloader_test)])
    )
    results.manual_close()  # Burn: `renderer.manual_close()` on what eval_all returns
    assert [r.items for r in results] == [64, 64]
    assert lifecycle(renderer.calls) == [
        ("start_global_progress", 2),
        ("start_test", "Plain", 64), ("end_test",),
        ("start_test", "Again", 64), ("end_test",),
        ("end_global_progress",),
        ("manual_close",),
    ]  # fmt: skip
    names = {name for name, state in renderer.states if state.entry.name == "Accuracy"}
    assert names == {"Plain", "Again"}


def test_renderer_rejects_an_object_of_neither_method_set(tmp_path):
    with pytest.raises(TypeError, match=r"written to Burn's traits.*Received: object"):
        training(tmp_path).renderer(object())
    with pytest.raises(TypeError, match=r"written to Burn's traits.*Received: object"):
        EvaluatorBuilder(tmp_path).renderer(object())


# -- with_progress_logger ------------------------------------------------------------------------


class MyTrainingProgressLogger(TrainingProgressLogger):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def start(self, total_epochs, starting_epoch, total_items) -> None:
        self.lines.append(f"start {starting_epoch}/{total_epochs}")

    def update_epoch(self, epoch) -> None:
        self.lines.append(f"epoch {epoch}")

    def start_split(self, split, total_items) -> None:
        self.lines.append(f"{split} {total_items}")

    def update_split(self, items_processed) -> None:
        pass

    def end_split(self) -> None:
        self.lines.append("end split")

    def end(self) -> None:
        self.lines.append("end")

    def log_event_training(self, event) -> None:
        pass


class MyEvaluationProgressLogger(EvaluationProgressLogger):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def start_global_progress(self, total_tests) -> None:
        self.lines.append(f"tests {total_tests}")

    def start_test(self, name, total_items) -> None:
        self.lines.append(f"{name} {total_items}")

    def update_test_progress(self, items_processed) -> None:
        self.lines.append(f"done {items_processed}")

    def end_test(self) -> None:
        self.lines.append("end test")

    def end_global_progress(self) -> None:
        self.lines.append("end")

    def log_event_evaluation(self, event) -> None:
        pass


def test_with_progress_logger_on_the_training_beside_the_renderer(tmp_path):
    bn.seed(1)
    progress = MyTrainingProgressLogger()
    result = (
        training(tmp_path)
        .renderer(CliMetricsRenderer())
        .with_progress_logger(progress)
        .launch(Learner(Mlp(), AdamConfig().init(), 1e-3))
    )
    assert result.epochs_completed == 2
    epoch = ["train 128", "end split", "valid 64", "end split"]
    assert progress.lines == ["start 1/2", *epoch, "epoch 1", *epoch, "epoch 2", "end"]
    assert (tmp_path / "train/epoch-2/Loss.log").exists()  # the default loggers still write


def test_with_progress_logger_on_the_evaluator(tmp_path):
    bn.seed(1)
    progress = MyEvaluationProgressLogger()
    _, dataloader_test = loaders(**SMALL)
    (
        EvaluatorBuilder(tmp_path)
        .renderer(CliMetricsRenderer())
        .metrics(AccuracyMetric(), LossMetric())
        .with_progress_logger(progress)
        .build(Mlp())
        .eval("mnist-test", dataloader_test)
    )
    assert progress.lines == ["tests 1", "mnist-test 64", "done 64", "end test", "end"]


def test_with_progress_logger_rejects_an_object_without_the_trait(tmp_path):
    with pytest.raises(TypeError, match=r"TrainingProgressLogger.*Received: int"):
        training(tmp_path).with_progress_logger(3)
    with pytest.raises(TypeError, match=r"EvaluationProgressLogger.*Received: int"):
        EvaluatorBuilder(tmp_path).with_progress_logger(3)

"""Burn main's `Evaluator`: a model's metrics on the test split, logged where Burn logs them,
equal to a hand-written loop, beside a run's own logs, shown by the summary and the CLI."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import burnish as bn
from burnish.data.dataloader import DataLoaderBuilder
from burnish.data.dataset import PartialDataset
from burnish.optim import AdamConfig
from burnish.train import EvaluatorBuilder, LearnerSummary
from burnish.train.logger import InMemoryMetricLogger
from burnish.train.loop.evaluator import evaluation_tag
from burnish.train.metric import AccuracyMetric, LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests import fork_server
from tests.helpers import MnistBatcher, iteration_lines, mnist
from tests.train.helpers import Mlp, builder, loaders

SCRIPT = Path(__file__).with_name("evaluate_run.py")


def test_loader(items: int | None = None, batch_size: int = 100):
    data = mnist("test")
    if items is not None:
        data = PartialDataset(data, 0, items)
    return DataLoaderBuilder(MnistBatcher()).batch_size(batch_size).build(data)


test_loader.__test__ = False  # a helper, not a test


def trained_model(tmp_path: Path) -> Mlp:
    bn.seed(2)
    train, valid = loaders(train_items=2000, valid_items=256)
    learner = builder(tmp_path, epochs=1).build(Mlp(), AdamConfig().init(), 2e-3)
    return learner.fit(train, valid).model


def evaluator(directory: Path, model, text: io.StringIO | None = None):
    renderer = CliMetricsRenderer(file=text or io.StringIO())
    return (
        EvaluatorBuilder(directory)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(renderer)
        .build(model)
    )


def hand_written(model, loader) -> tuple[float, float, int]:
    """Accuracy (%) and mean loss over every item, by a plain PyTorch loop."""
    correct, loss_sum, items = 0, 0.0, 0
    model = model.valid()
    with torch.no_grad():
        for batch in loader:
            logits = model(batch.images)
            correct += int((logits.argmax(1) == batch.targets).sum())
            loss_sum += float(F.cross_entropy(logits, batch.targets, reduction="sum"))
            items += len(batch.targets)
    return 100.0 * correct / items, loss_sum / items, items


def test_accuracy_on_the_mnist_test_set_equals_a_hand_written_loop(tmp_path):
    model = trained_model(tmp_path / "run")
    expected_accuracy, expected_loss, items = hand_written(model, test_loader())
    assert items == 10_000 and expected_accuracy > 70  # a trained model on the whole set

    result = evaluator(tmp_path / "run", model).eval("mnist-test", test_loader())

    assert result.items == 10_000 and not result.interrupted
    assert result.metrics["Accuracy"] == pytest.approx(expected_accuracy, abs=1e-6)
    assert result.metrics["Loss"] == pytest.approx(expected_loss, rel=1e-6)


def test_logs_go_where_burn_writes_an_evaluation_side_by_side(tmp_path):
    model = Mlp()
    evaluator_ = evaluator(tmp_path, model)
    first = evaluator_.eval(" MNIST test ", test_loader(250, batch_size=100))
    second = evaluator_.eval("Train Subset", test_loader(64, batch_size=32))

    assert first.directory == tmp_path / "test" / "mnist-test"
    assert second.directory == tmp_path / "test" / "train-subset"
    lines = iteration_lines(first.directory / "Accuracy.log")
    assert [line.split(",")[1] for line in lines] == ["100", "100", "50"]
    assert len(iteration_lines(second.directory / "Loss.log")) == 2
    aggregates = json.loads((first.directory / "aggregates.json").read_text())
    assert aggregates["metrics"]["Accuracy"]["value"] == pytest.approx(first.metrics["Accuracy"])
    assert aggregates["metrics"]["Accuracy"]["count"] == 250
    assert not list(first.directory.glob("epoch-*"))  # Burn's eval layout: no epoch directory
    log = (tmp_path / "evaluation.log").read_text()
    assert "Evaluating ' MNIST test '" in log and "Evaluation 'Train Subset' on 64 items" in log

    # Evaluating again under a name replaces its logs.
    again = evaluator_.eval("mnist-test", test_loader(100, batch_size=100))
    assert len(iteration_lines(again.directory / "Accuracy.log")) == 1


def test_runs_the_inference_step_on_the_valid_twin_without_autograd(tmp_path):
    seen = []

    class Checked(Mlp):
        def valid_step(self, batch):
            seen.append((torch.is_grad_enabled(), self.training, self.linear1.weight.requires_grad))
            return super().valid_step(batch)

    model = Checked()
    model.train()
    evaluator(tmp_path, model).eval("test", test_loader(64, batch_size=32))
    assert seen == [(False, False, False)] * 2
    assert model.training  # the model itself keeps its mode

    class WithTestStep(Mlp):
        def valid_step(self, batch):
            raise AssertionError("test_step comes first")

        def test_step(self, batch):
            return Mlp.valid_step(self, batch)

    result = evaluator(tmp_path, WithTestStep()).eval("test", test_loader(64, batch_size=32))
    assert result.items == 64


def test_errors_name_what_is_wrong_and_the_fix(tmp_path):
    with pytest.raises(TypeError, match="InferenceStep"):
        EvaluatorBuilder(tmp_path).metrics(LossMetric()).build(torch.nn.Linear(2, 2))
    with pytest.raises(ValueError, match=r"\.metrics\(AccuracyMetric\(\)"):
        EvaluatorBuilder(tmp_path).build(Mlp())
    with pytest.raises(TypeError, match="metric\\(\\.\\.\\.\\)"):
        EvaluatorBuilder(tmp_path).metric_numeric(_TextMetric())
    with pytest.raises(ValueError, match="already registered"):
        EvaluatorBuilder(tmp_path).metrics(LossMetric(), LossMetric())
    for bad in ("", "  ", "a/b", ".."):
        with pytest.raises(ValueError, match="non-empty name without path separators"):
            evaluation_tag(bad)
    assert evaluation_tag(" My Test Set ") == "my-test-set"


class _TextMetric(bn.train.metric.Metric):
    name = "Note"

    def update(self, item, metadata):
        return None

    def clear(self):
        pass


def test_a_stop_request_ends_the_evaluation_after_the_current_batch(tmp_path):
    interrupter = bn.train.Interrupter()

    class Stopping(Mlp):
        def valid_step(self, batch):
            interrupter.stop("enough")
            return super().valid_step(batch)

    def evaluation(model):
        return (
            EvaluatorBuilder(tmp_path)
            .metrics(LossMetric())
            .renderer(CliMetricsRenderer(file=io.StringIO()))
            .with_interrupter(interrupter)
            .build(model)
        )

    result = evaluation(Stopping()).eval("test", test_loader(300, batch_size=100))
    assert result.interrupted and result.items == 100
    assert len(iteration_lines(result.directory / "Loss.log")) == 1
    # The next evaluation runs in full: the stop request was for the last one.
    assert not evaluation(Mlp()).eval("test", test_loader(300, batch_size=100)).interrupted


def test_sigterm_ends_the_evaluation_after_the_current_batch_with_preempted(tmp_path):
    import signal

    class Terminated(Mlp):
        def valid_step(self, batch):
            os.kill(os.getpid(), signal.SIGTERM)  # handled at the next bytecode boundary
            return super().valid_step(batch)

    evaluation = (
        EvaluatorBuilder(tmp_path)
        .metrics(LossMetric())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .build(Terminated())
    )
    previous = signal.getsignal(signal.SIGTERM)
    with pytest.raises(bn.train.Preempted) as raised:
        evaluation.eval("test", test_loader(300, batch_size=100))
    assert raised.value.code == 128 + signal.SIGTERM
    [result] = raised.value.results
    assert result.interrupted and result.items == 100
    assert signal.getsignal(signal.SIGTERM) == previous


def test_the_cli_renderer_shows_the_test_split_by_name(tmp_path):
    text = io.StringIO()
    evaluation = (
        EvaluatorBuilder(tmp_path)
        .metrics(AccuracyMetric())
        .renderer(CliMetricsRenderer(every_percent=40, file=text))
        .build(Mlp())
    )
    evaluation.eval("mnist-test", test_loader(500, batch_size=100))
    lines = text.getvalue().splitlines()
    assert lines[0] == "Evaluating mnist-test."
    assert any(line.startswith("[test mnist-test] | iteration 2 | items 200/500") for line in lines)
    assert lines[-1].startswith("[test mnist-test] done in ") and "Accuracy" in lines[-1]


def test_summary_report_and_cli_show_the_test_rows_beside_the_run(tmp_path):
    run = tmp_path / "run"
    model = trained_model(run)
    result = evaluator(run, model).eval("mnist-test", test_loader(1000))

    summary = LearnerSummary.from_dir(run)
    [accuracy] = [m for m in summary.metrics.test["mnist-test"] if m.name == "Accuracy"]
    assert accuracy.entries[0].value == pytest.approx(result.metrics["Accuracy"])
    text = str(summary)
    assert "| Train " in text and "| Valid " in text
    row = next(line for line in text.splitlines() if line.startswith("| Test (mnist-test) | Acc"))
    assert f"{result.metrics['Accuracy']:.3f}" in row and "| -        |" in row

    cli = ["-m", "burnish", "summary", str(run)]  # forked (tests/fork_server.py)
    out = fork_server.run(cli, capture_output=True, text=True, timeout=120, check=True).stdout
    assert "Test (mnist-test)" in out and "Train" in out
    page = tmp_path / "report.html"
    report = ["-m", "burnish", "report", str(run), "-o", str(page)]
    fork_server.run(report, capture_output=True, text=True, timeout=120, check=True)
    assert "Test (mnist-test)" in page.read_text()


def test_summary_of_an_evaluation_only_directory(tmp_path, capsys):
    evaluation = (
        EvaluatorBuilder(tmp_path)
        .metrics(AccuracyMetric(), LossMetric())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .summary()
        .build(Mlp())
    )
    evaluation.eval_all([("a", test_loader(100)), ("b", test_loader(200))])
    out = capsys.readouterr().out
    assert "| Test (a) | Accuracy" in out and "| Test (b) | Loss" in out
    cli = ["-m", "burnish", "summary", str(tmp_path)]
    done = fork_server.run(cli, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Test (b)" in done.stdout, done.stderr


def test_eval_all_takes_pairs_or_a_mapping_as_burn_takes_any_iterator(tmp_path):
    evaluation = (
        EvaluatorBuilder(tmp_path)
        .metrics(LossMetric())
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .build(Mlp())
    )
    results = evaluation.eval_all({"first split": test_loader(100), "b": test_loader(200)})
    assert [(r.name, r.items) for r in results] == [("first split", 100), ("b", 200)]
    assert (tmp_path / "test/first-split/Loss.log").exists()
    with pytest.raises(TypeError, match=r"\(name, dataloader\) pairs.*Received the entry 'ab'"):
        evaluation.eval_all(["ab"])


def test_a_metric_logger_replaces_the_files(tmp_path):
    logger = InMemoryMetricLogger()
    evaluation = (
        EvaluatorBuilder(tmp_path)
        .metrics(LossMetric())
        .with_metric_logger(logger)
        .renderer(CliMetricsRenderer(file=io.StringIO()))
        .with_application_logger(None)
        .build(Mlp())
    )
    evaluation.eval("x", test_loader(200))
    assert len(logger.read_numeric("Loss", 1)) == 2
    assert not (tmp_path / "test").exists() and not (tmp_path / "evaluation.log").exists()


def test_a_run_writing_in_the_directory_locks_the_evaluator_out(tmp_path):
    from burnish.run_lock import RunLock, RunLockedError

    with RunLock(tmp_path), pytest.raises(RunLockedError):
        evaluator(tmp_path, Mlp()).eval("x", test_loader(100))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_ranks_under_torchrun_equal_one_process(tmp_path):
    """1000 items in batches of 64 over 2 ranks: 16 batches, the last of 40 items; each rank
    evaluates its share once (no padding), the metrics are summed over the ranks."""
    one, two = tmp_path / "one", tmp_path / "two"
    alone = [str(SCRIPT), str(one), str(tmp_path / "one.json")]  # forked: tests/fork_server.py
    fork_server.ranks(alone, 1, check=True, timeout=240, capture_output=True)
    ranks = [str(SCRIPT), str(two), str(tmp_path / "two.json")]
    done = fork_server.ranks(ranks, 2, timeout=300, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-4000:]
    a = json.loads((tmp_path / "one.json").read_text())
    b = json.loads((tmp_path / "two.json").read_text())
    assert a["items"] == b["items"] == 1000
    for name in ("Accuracy", "Loss"):
        assert b["metrics"][name] == pytest.approx(a["metrics"][name], rel=1e-6), name
    # Rank 0 wrote the logs: one line per iteration of the ranks' shares, 1000 items in all.
    lines = iteration_lines(two / "test/mnist-test/Loss.log")
    assert sum(int(line.split(",")[1]) for line in lines) == 1000
    assert done.stdout.count("evaluate_run: done False") == 2

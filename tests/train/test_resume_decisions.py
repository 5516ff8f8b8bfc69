"""Resume after every decision of an epoch: early stopping and checkpoint strategies continue
exactly, a run that ended stays ended, deletions cut short by a crash are finished, and a
learner trains once. In-process runs of the scripted regression (`scripted.py`); the SIGKILL
versions are in test_crash_resume.py."""

from __future__ import annotations

import io
import logging

import pytest
import torch

from burnish.train.checkpoint.file import FileCheckpointer
from burnish.train.metric import LossMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.train.scripted import build, builder, checkpoints, loaders, logs, parameters


def fit(artifact_dir, configure=None, **options):
    configured = builder(artifact_dir, **options)
    if configure is not None:
        configured = configure(configured)
    return build(configured).fit(*loaders())


def assert_same_run(expected, expected_dir, actual, actual_dir):
    """Same result fields, parameters, checkpoints kept and metric logs."""
    assert (actual.epochs_completed, actual.stopped_early, actual.interrupted) == (
        expected.epochs_completed,
        expected.stopped_early,
        expected.interrupted,
    )
    for name, tensor in parameters(expected.model).items():
        assert torch.equal(tensor, actual.model.state_dict()[name]), name
    assert checkpoints(actual_dir) == checkpoints(expected_dir)
    assert logs(actual_dir) == logs(expected_dir)


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """`straight(strategy)`: an uninterrupted 8-epoch run (it stops early after epoch 5)."""
    runs = {}

    def run(strategy):
        if strategy not in runs:
            directory = tmp_path_factory.mktemp(f"straight-{strategy}")
            result = fit(directory, strategy_name=strategy)
            runs[strategy] = result, directory, parameters(result.model)
        return runs[strategy]

    return run


@pytest.mark.parametrize("strategy", ["composed", "metric", "keep"])
@pytest.mark.parametrize("first_epochs", [1, 2, 3, 4])
def test_resume_after_any_epoch_boundary_stops_where_a_straight_run_stops(
    straight, strategy, first_epochs, tmp_path
):
    expected, expected_dir, _ = straight(strategy)
    assert (expected.epochs_completed, expected.stopped_early) == (5, True)
    assert (
        checkpoints(expected_dir)
        == {
            "composed": ["epoch-3", "epoch-4", "epoch-5"],
            "metric": ["epoch-3", "epoch-5"],  # the best, and the last: it records the end
            "keep": ["epoch-4", "epoch-5"],
        }[strategy]
    )

    first = fit(tmp_path, strategy_name=strategy, epochs=first_epochs)
    assert (first.epochs_completed, first.stopped_early) == (first_epochs, False)
    resumed = fit(tmp_path, lambda b: b.resume(), strategy_name=strategy)
    assert_same_run(expected, expected_dir, resumed, tmp_path)


def test_resume_of_a_run_that_stopped_early_trains_and_deletes_nothing(straight, tmp_path):
    *_, expected_parameters = straight("composed")
    fit(tmp_path)
    kept = {
        name: (tmp_path / "checkpoint" / name / "COMMIT").read_bytes()
        for name in checkpoints(tmp_path)
    }
    logged = logs(tmp_path)
    shown = io.StringIO()
    resumed = fit(tmp_path, lambda b: b.resume().renderer(CliMetricsRenderer(file=shown)))

    assert (resumed.epochs_completed, resumed.stopped_early, resumed.interrupted) == (
        5,
        True,
        False,
    )
    for name, tensor in expected_parameters.items():  # the final model, from epoch-5
        assert torch.equal(tensor, resumed.model.state_dict()[name]), name
    assert logs(tmp_path) == logged
    assert {n: (tmp_path / "checkpoint" / n / "COMMIT").read_bytes() for n in kept} == kept
    assert checkpoints(tmp_path) == list(kept)
    final = tmp_path / "checkpoint" / "epoch-5"
    message = "Training is already complete: 5 epochs, nothing left to train (early stopping"
    assert message in shown.getvalue() and str(final) in shown.getvalue()
    assert "Training for" not in shown.getvalue()
    assert message in (tmp_path / "experiment.log").read_text()


def test_resume_of_a_completed_run_returns_its_epochs_and_final_model(tmp_path):
    completed = fit(tmp_path, epochs=3, stop=False)
    shown = io.StringIO()
    again = fit(
        tmp_path,
        lambda b: b.resume().renderer(CliMetricsRenderer(file=shown)),
        epochs=3,
        stop=False,
    )
    assert (again.epochs_completed, again.stopped_early, again.interrupted) == (3, False, False)
    for name, tensor in parameters(completed.model).items():
        assert torch.equal(tensor, again.model.state_dict()[name]), name
    assert "Training is already complete: 3 epochs" in shown.getvalue()
    assert "raise `num_epochs` to go on" in shown.getvalue()
    assert str(tmp_path / "checkpoint" / "epoch-3") in shown.getvalue()


class Crash(BaseException):
    """Stands for the process dying: nothing catches it."""


@pytest.mark.parametrize(
    ("strategy", "doomed"),
    [("composed", "epoch-1"), ("composed", "epoch-2"), ("metric", "epoch-2")],
)
def test_deletions_a_crash_cut_short_are_carried_out_on_resume(
    straight, strategy, doomed, tmp_path, monkeypatch, caplog
):
    expected, expected_dir, _ = straight(strategy)
    delete = FileCheckpointer.delete

    def crashing(self, checkpoint):  # the new checkpoint is committed; its deletions are not
        if checkpoint.name == doomed:
            raise Crash
        delete(self, checkpoint)

    monkeypatch.setattr(FileCheckpointer, "delete", crashing)
    with pytest.raises(Crash):
        fit(tmp_path, strategy_name=strategy)
    monkeypatch.undo()
    assert doomed in checkpoints(tmp_path)
    with caplog.at_level(logging.WARNING, logger="burnish.train"):
        resumed = fit(tmp_path, lambda b: b.resume(), strategy_name=strategy)
    assert f"a crash kept from being deleted: {doomed}" in caplog.text
    assert_same_run(expected, expected_dir, resumed, tmp_path)


def test_fit_twice_is_refused_and_says_what_to_do(tmp_path):
    learner = build(builder(tmp_path, epochs=2, stop=False))
    learner.fit(*loaders())
    logged = logs(tmp_path)
    trained = parameters(learner.model())
    with pytest.raises(
        RuntimeError, match=r"`fit` was already called on this Learner.*\.resume\(\)"
    ):
        learner.fit(*loaders())
    assert logs(tmp_path) == logged
    for name, tensor in trained.items():
        assert torch.equal(tensor, learner.model().state_dict()[name]), name


def test_a_fit_refused_before_training_can_be_retried(tmp_path):
    learner = build(builder(tmp_path, epochs=1, stop=False))
    with pytest.raises(ValueError, match="`fit` needs a train data loader"):
        learner.fit()
    assert learner.fit(*loaders()).epochs_completed == 1


class StopAt(LossMetric):
    """Asks the learner to stop at an iteration of an epoch (like Ctrl-C)."""

    def __init__(self, interrupter, epoch, iteration):
        super().__init__()
        self.name, self.interrupter, self.at = "StopAt", interrupter, (epoch, iteration)

    def update(self, item, metadata):
        if (metadata.epoch, metadata.iteration) == self.at:
            self.interrupter.stop("test")
        return super().update(item, metadata)


def test_an_interrupted_runs_summary_counts_the_epochs_it_completed(tmp_path, capsys):
    def configure(b):
        return b.summary().metric_train_numeric(StopAt(b.interrupter(), 2, 3))

    stopped = fit(tmp_path, configure, epochs=3, stop=False)
    assert stopped.interrupted and stopped.epochs_completed == 1
    assert stopped.summary.epochs == 1
    assert "Total Epochs: 1\n" in capsys.readouterr().out

    resumed = fit(tmp_path, lambda b: b.summary().resume(), epochs=3, stop=False)
    assert resumed.epochs_completed == 3 and resumed.summary.epochs == 3
    assert "Total Epochs: 3\n" in capsys.readouterr().out

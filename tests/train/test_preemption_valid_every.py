"""Preemption of a run with validations inside its epochs (`valid_every`), real SIGTERMs
(issue 40, item 8).

metrics.csv after a preemption and resume holds the straight run's rows in the straight run's
order: with no checkpoint to force a read-back, the training points logged before a
validation reach the trackers before the validation's rows, whatever the renderer's pace and
wherever the run was stopped. A SIGTERM during such a validation is announced as a stop in
that validation, after the train iteration it follows."""

from __future__ import annotations

import csv
import json
import signal

import pytest

from tests.train.test_crash_resume import assert_same_run
from tests.train.test_preemption import finish, preempt

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

STEPS_PER_EPOCH = 30  # crash_run.py: 960 items in batches of 32
FLAGS = ("--trackers", "--epochs", "2", "--checkpoint-every", "50", "--valid-every", "7")


def rows(artifacts):
    with (artifacts / "metrics.csv").open(newline="") as file:
        return list(csv.DictReader(file))


def assert_event_order(artifacts, table):
    """Each training point comes after the validations taken at or before its step (as
    valid/validations.json records them) and before the later ones."""
    taken = json.loads((artifacts / "valid" / "validations.json").read_text())["validations"]
    at_step = {point["validation"]: point["optimizer_steps"] for point in taken}
    last_validation = 0
    for row in table:
        if row["split"] == "valid":
            last_validation = max(last_validation, int(row["epoch"]))
        elif row["iteration"]:
            step = (int(row["epoch"]) - 1) * STEPS_PER_EPOCH + int(row["iteration"])
            before = [n for n, at in at_step.items() if at < step]
            assert last_validation == max(before, default=0), (
                f"train step {step} logged after validation {last_validation}; "
                f"validations taken before it: {before}"
            )


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """The uninterrupted run: its artifact directory and final parameters."""
    directory = tmp_path_factory.mktemp("straight")
    finish(directory / "artifacts", directory / "final.pt", *FLAGS)
    return directory / "artifacts", directory / "final.pt"


def preempted_then_resumed(straight, tmp_path, *mark: str) -> str:
    """SIGTERM at the MARK, resume, compare with the straight run; the preempted run's stderr."""
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    code, _, stderr = preempt(artifacts, out, *FLAGS, *mark)
    assert code == 128 + signal.SIGTERM, stderr[-3000:]
    finish(artifacts, out, *FLAGS)
    assert_same_run(*straight, artifacts, out)
    assert rows(artifacts) == rows(straight[0])  # the same rows in the same order
    return stderr


def test_metrics_csv_rows_after_a_preemption_keep_the_straight_runs_order(straight, tmp_path):
    expected = rows(straight[0])
    assert any(row["split"] == "valid" for row in expected)
    assert_event_order(straight[0], expected)
    preempted_then_resumed(straight, tmp_path, "--mark-at-step", "10")


def test_sigterm_during_a_validation_inside_the_epoch_is_announced_as_such(straight, tmp_path):
    stderr = preempted_then_resumed(straight, tmp_path, "--mark-in-valid")
    where = "stopped at epoch 1, validation 1 inside the epoch (after train iteration 7)"
    assert where in stderr
    assert where in (tmp_path / "artifacts" / "experiment.log").read_text()
    assert "iteration 7 (train)" not in stderr

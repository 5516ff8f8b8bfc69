"""metrics.csv after a preemption and resume holds the straight run's rows in the straight
run's order (issue 40, item 8): with validations inside the epochs and no checkpoint to force
a read-back, the training points logged before a validation reach the trackers before the
validation's rows, whatever the renderer's pace and wherever the run was stopped."""

from __future__ import annotations

import csv
import json
import signal

import pytest

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


def test_metrics_csv_rows_after_a_preemption_keep_the_straight_runs_order(tmp_path):
    straight = tmp_path / "straight"
    finish(straight / "artifacts", straight / "final.pt", *FLAGS)
    expected = rows(straight / "artifacts")
    assert any(row["split"] == "valid" for row in expected)
    assert_event_order(straight / "artifacts", expected)

    artifacts = tmp_path / "preempted" / "artifacts"
    code, _, stderr = preempt(
        artifacts, artifacts.parent / "final.pt", *FLAGS, "--mark-at-step", "10"
    )
    assert code == 128 + signal.SIGTERM, stderr[-3000:]
    finish(artifacts, artifacts.parent / "final.pt", *FLAGS)
    assert rows(artifacts) == expected

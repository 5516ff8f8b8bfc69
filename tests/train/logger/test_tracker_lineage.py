"""End to end (issue 40, item 2): a real learner with CSV, TensorBoard, MLflow and W&B
(offline) trains 4 epochs, branches with `checkpoint(2)` and another learning rate, is
SIGKILLed inside the branch and resumed; every tracker's files then hold exactly the history
of the straight run that the final line describes (2 epochs at 1e-3, a third at 3e-3): each
step once, the branch's values after epoch 2, the branch's `lr` param. Real processes
(tests/train/lineage_run.py, forked by tests/fork_server.py)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.train.logger.test_tracker_branches import file_history, wandb_history
from tests.train.logger.test_trackers import (
    mlflow_run,
    read_csv,
    read_tensorboard,
    wandb_rows,
    with_mlflow_store,
)
from tests.train.test_crash_resume import communicate, start

pytest.importorskip("mlflow")
pytest.importorskip("wandb")
pytest.importorskip("tensorboard")

SCRIPT = Path(__file__).parents[1] / "lineage_run.py"
TRACKERS = "csv,tensorboard,mlflow,wandb"


def launch(directory: Path, epochs: int, *flags: str) -> tuple[int, str]:
    """One start of the run: its exit code and console (stderr)."""
    command = [str(SCRIPT), str(directory), str(directory / "final.pt"), "--epochs", str(epochs)]
    process = start([*command, *flags])
    _, stderr = communicate(process)
    assert process.returncode in (0, -signal.SIGKILL), stderr[-3000:]
    return process.returncode, stderr


@pytest.mark.parametrize("kill", ["in epoch 3", "at the trackers' start"])
def test_a_branch_killed_and_resumed_leaves_every_tracker_the_final_line(
    tmp_path, wandb_home, mlflow_db, monkeypatch, kill
):
    """Killed in the branch's epoch 3, or as its trackers start (the branch begun, the trackers
    not told: the resume, which continues the branch's line, starts their branch runs)."""
    monkeypatch.delenv("WANDB_SERVICE", raising=False)  # its own service, killed with it
    straight = tmp_path / "straight"  # the final line's straight run, its CSV the reference
    assert launch(straight, 2, "--trackers", "csv")[0] == 0
    assert launch(straight, 3, "--lr", "3e-3", "--start", "resume", "--trackers", "csv")[0] == 0
    epochs, steps = file_history(straight)
    assert len(steps) == 3 * 4 * 3  # Accuracy, Loss, lr at steps 1..12

    run = tmp_path / "run"
    with_mlflow_store(run, mlflow_db)
    assert launch(run, 4, "--trackers", TRACKERS)[0] == 0
    parent_mlflow = json.loads((run / "mlflow-run.json").read_text())["run_id"]
    parent_wandb = json.loads((run / "wandb-run.json").read_text())["id"]
    branch = ("--lr", "3e-3", "--trackers", TRACKERS)
    where = ("--kill-at-step", "3") if kill == "in epoch 3" else ("--kill-at-trackers",)
    code, said = launch(run, 3, "--start", "2", *where, *branch)
    assert code == -signal.SIGKILL
    code, resumed = launch(run, 3, "--start", "resume", *branch)
    assert code == 0
    lines = [line for line in said.splitlines() if "Branching from" in line or "is a new" in line]
    lines += [line for line in resumed.splitlines() if "is a new" in line]
    assert len(lines) == 3, (said + resumed)[-3000:]  # the lineage's, MLflow's and W&B's
    assert not any(line.startswith("Warning") for line in lines), lines
    assert json.loads((run / "mlflow-run.json").read_text())["line"] == "line 1 from epoch-2"

    # CSV: the straight table's rows, each once.
    got = sorted(map(tuple, read_csv(run / "metrics.csv")))
    assert got == sorted(map(tuple, read_csv(straight / "metrics.csv")))
    assert file_history(run) == (epochs, steps)

    # TensorBoard: every step once, the straight values (float32 in event files).
    _, scalars = read_tensorboard(run / "tensorboard")
    expected: dict[str, list] = {}
    for (split, name, epoch), value in epochs.items():
        expected.setdefault(f"{split}/{name}", []).append((epoch, value))
    for (name, step), value in steps.items():
        expected.setdefault(f"iteration/train/{name}", []).append((step, value))
    assert set(scalars) == set(expected)
    for tag, points in expected.items():
        assert [s for s, _ in scalars[tag]] == [s for s, _ in sorted(points)], tag
        for (_, value), (_, want) in zip(scalars[tag], sorted(points)):
            assert value == pytest.approx(want, rel=1e-6), tag

    # MLflow: the branch's run, a child of the first, with exactly that history and its lr.
    client, found, history = mlflow_run(run)
    assert found.info.run_id != parent_mlflow
    assert found.data.tags["mlflow.parentRunId"] == parent_mlflow
    assert found.data.params["lr"] == "0.003"
    assert client.get_run(parent_mlflow).data.params["lr"] == "0.001"
    assert {key: sorted(points) for key, points in history.items()} == {
        key: sorted(points) for key, points in expected.items()
    }

    # W&B: the branch's run; its offline files hold each point of the final line once.
    run_id, _, rows = wandb_rows(run)
    assert run_id != parent_wandb
    assert wandb_history(rows) == (epochs, steps)

"""A run that `on_non_finite("stop")` ends returns normally from `fit`; a script that checks
the result as the docs and the examples do (`examples.interrupted.exit_if_interrupted`) exits
non-zero with a message, so a cluster does not read the job as a success (issue 40, item 8).
Real processes, forked from tests/fork_server.py."""

from __future__ import annotations

from pathlib import Path

from examples.interrupted import EXIT_NON_FINITE
from tests import fork_server

SCRIPT = Path(__file__).with_name("non_finite_run.py")


def run(artifact_dir: Path, nan_at: int):
    return fork_server.run(
        [str(SCRIPT), str(artifact_dir), str(nan_at)], capture_output=True, text=True, timeout=300
    )


def test_a_loss_gone_non_finite_exits_non_zero_with_a_message(tmp_path):
    done = run(tmp_path / "artifacts", nan_at=3)
    assert done.returncode == EXIT_NON_FINITE != 0, done.stderr[-3000:]
    # The learner's warning (on the renderer's stream), then the script's own line.
    assert "Training stopped after a non-finite value at epoch 1, iteration 3" in done.stdout
    assert "epoch-1-iteration-2, holds finite weights" in done.stdout
    assert "Training stopped on a non-finite loss or gradient" in done.stderr
    assert "no model was saved. Fix the cause, then continue with" in done.stderr
    assert "saved the model" not in done.stdout
    assert not (tmp_path / "artifacts" / "model.mpk").exists()


def test_a_finite_run_exits_zero(tmp_path):
    done = run(tmp_path / "artifacts", nan_at=0)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "saved the model" in done.stdout

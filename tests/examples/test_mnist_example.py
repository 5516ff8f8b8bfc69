"""The guide's MNIST example, run short: training artifacts, then inference from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from examples.mnist.__main__ import main
from examples.mnist.training import TrainingConfig
from tests import fork_server
from tests.examples.interrupt import start_and_interrupt
from tests.helpers import iteration_lines

# One intra-op thread: two per test worker oversubscribe the cores (fp16's emulated kernels
# took 10.6 s of CPU with two, 7.1 s with one; the same numbers).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

REPO = Path(__file__).resolve().parents[2]


def test_short_run_trains_saves_and_infers(tmp_path, capsys):
    artifact_dir = tmp_path / "mnist"
    accuracy = main(
        ["--epochs", "1", "--limit", "1280", "--workers", "0", "--artifact-dir", str(artifact_dir)]
    )
    assert 30.0 < accuracy <= 100.0  # one epoch on 1,280 images at lr 1e-4: well above chance
    config = TrainingConfig.load(artifact_dir / "config.json")
    assert config.model.hidden_size == 512 and config.num_epochs == 1
    assert json.loads((artifact_dir / "config.json").read_text())["optimizer"]["epsilon"] == 1e-5
    assert (artifact_dir / "model.mpk").is_file()
    assert (artifact_dir / "checkpoint" / "epoch-1" / "COMMIT").is_file()
    assert len(iteration_lines(artifact_dir / "train" / "epoch-1" / "Loss.log")) == 20
    out = capsys.readouterr().out
    assert "Learner Summary" in out
    assert "Predicted" in out and "Expected" in out
    assert "Test accuracy (evaluator):" in out and "on 1280 images" in out
    test_logs = artifact_dir / "test" / "mnist-test"
    assert len(iteration_lines(test_logs / "Accuracy.log")) == 20


def test_the_example_runs_unchanged_under_torchrun(tmp_path):
    """Two Gloo ranks: rank 0 alone clears the artifact directory and writes the run's files;
    every rank evaluates and infers from the model rank 0 saved."""
    artifact_dir = tmp_path / "mnist"
    args = [
        "--epochs",
        "1",
        "--limit",
        "640",
        "--workers",
        "0",
        "--artifact-dir",
        str(artifact_dir),
    ]
    done = fork_server.ranks(["-m", "examples.mnist", *args], 2, cwd=REPO,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("Predicted ") == 2  # one inference per rank
    assert (artifact_dir / "model.mpk").is_file() and (artifact_dir / "config.json").is_file()
    assert (artifact_dir / "checkpoint" / "epoch-1" / "COMMIT").is_file()


def test_ctrl_c_neither_saves_nor_evaluates_exits_130_and_says_how_to_resume(tmp_path, capsys):
    artifact_dir = tmp_path / "mnist"
    args = [
        "--epochs",
        "1",
        "--limit",
        "1280",
        "--workers",
        "0",
        "--artifact-dir",
        str(artifact_dir),
    ]
    code, out, err = start_and_interrupt(["-m", "examples.mnist", *args])
    assert code == 130, out + err
    assert "Training was interrupted after " in err and "no model.mpk was saved" in err
    resume = f"python -m examples.mnist {' '.join(args)} --resume"
    assert f"Continue from the last checkpoint with: {resume}" in err
    assert "Test accuracy" not in out and "Predicted" not in out
    assert not (artifact_dir / "model.mpk").exists()
    # The command it gives continues the run from its checkpoint and finishes it.
    main([*args, "--resume"])
    out = capsys.readouterr().out
    assert "Resumed from checkpoint" in out and "Predicted" in out
    assert (artifact_dir / "model.mpk").is_file()

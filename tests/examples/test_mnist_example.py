"""The guide's MNIST example, run short: training artifacts, then inference from them."""

from __future__ import annotations

import json

from examples.mnist.__main__ import main
from examples.mnist.training import TrainingConfig


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
    assert len((artifact_dir / "train" / "epoch-1" / "Loss.log").read_text().splitlines()) == 20
    out = capsys.readouterr().out
    assert "Learner Summary" in out
    assert "Predicted" in out and "Expected" in out
    assert "Test accuracy (evaluator):" in out and "on 1280 images" in out
    test_logs = artifact_dir / "test" / "mnist-test"
    assert len((test_logs / "Accuracy.log").read_text().splitlines()) == 20

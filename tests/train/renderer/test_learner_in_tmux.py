"""The real MNIST example under the TUI in a real terminal: the dashboard shows the learner's
metrics, and `q` stops training gracefully with a checkpoint."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.train.renderer.test_tmux import REPO, Tmux, pytestmark  # noqa: F401


def test_q_stops_the_mnist_example_with_a_checkpoint(tmux: Tmux, tmp_path: Path) -> None:
    artifacts = tmp_path / "mnist"
    command = (
        f"cd {REPO} && BURNISH_RENDERER=tui BURNISH_DATASETS={REPO / 'data'} {sys.executable} "
        f"-m examples.mnist --epochs 50 --limit 2000 --workers 0 --artifact-dir {artifacts}"
    )
    tmux(
        "new-session", "-d", "-s", "demo", "-x", "120", "-y", "40",
        f"sh -c \"{command}; echo exit=\\$?; sleep 600\"",
    )  # fmt: skip
    tmux.wait_for(r"Accuracy", r"Loss", r"[Ee]poch\s+\d+\s*/\s*50", r"[Ii]teration")
    tmux("send-keys", "-t", "demo", "q")
    screen = tmux.wait_for(r"exit=130")  # interrupted: says so, saves no half-trained model
    assert "Continue from the last checkpoint with:" in screen and "--resume" in screen
    assert "Predicted" not in screen
    log = (artifacts / "experiment.log").read_text()
    assert "Training interrupted" in log and "(q)" in log
    names = [p.name for p in (artifacts / "checkpoint").iterdir()]
    assert any("-iteration-" in name for name in names), names
    assert not (artifacts / "model.mpk").exists()

"""The Evaluator's dashboard in a real terminal: it shows the test split by its name, and `q`
ends the evaluation early."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.train.renderer.test_tmux import REPO, Tmux, pytestmark  # noqa: F401

SCRIPT = REPO / "tests" / "train" / "evaluate_run.py"


def test_the_dashboard_shows_the_evaluation_and_q_stops_it(tmux: Tmux, tmp_path: Path) -> None:
    out = tmp_path / "result.json"
    command = (
        f"BURNISH_RENDERER=tui {sys.executable} {SCRIPT} {tmp_path / 'eval'} {out} "
        "--items 10000 --slow 0.05 --renderer default"
    )
    tmux(
        "new-session", "-d", "-s", "demo", "-x", "120", "-y", "40",
        f"sh -c \"{command}; echo exit=\\$?; sleep 600\"",
    )  # fmt: skip
    screen = tmux.wait_for(
        r"Testing", r"MNIST test", r"Test\s+Test", r"batch\s+epoch", r"Items\s+\d+/10000"
    )
    assert "Training" not in screen and "Valid" not in screen  # only the test split is shown
    tmux("send-keys", "-t", "demo", "q")
    tmux.wait_for(r"evaluate_run: done True", r"exit=0")
    result = json.loads(out.read_text())
    assert result["interrupted"] and 0 < result["items"] < 10_000

"""`ThroughputMetric` and its MFU on the dashboard of a real run in a real terminal (tmux)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.train.renderer.test_tmux import Tmux, pytestmark  # noqa: F401

SCRIPT = Path(__file__).with_name("dashboard_run.py")


@pytest.mark.slow
def test_the_dashboard_shows_throughput_and_mfu(tmux: Tmux, tmp_path: Path) -> None:
    command = f"{sys.executable} {SCRIPT} {tmp_path / 'run'} --throughput"
    shell = f"OMP_NUM_THREADS=1 {command}; echo exit=$?; sleep 600"
    tmux("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", f"sh -c '{shell}'")
    number = r"\d[\d.e+-]*"
    screen = tmux.wait_for(
        # The metrics panel's rows: batch and epoch values of the training split.
        rf"│ Throughput\s+{number}\s+{number}\s+-\s+-",
        rf"│ MFU\s+{number}\s+{number}\s+-\s+-",
        r"Epoch\s+[2-9]\d*/1000",
        deadline_s=120.0,
    )
    assert "Traceback" not in screen, screen
    tmux("send-keys", "-t", "demo", "q")
    screen = tmux.wait_for(r"exit=\d+", deadline_s=120.0)
    assert "exit=0" in screen, screen

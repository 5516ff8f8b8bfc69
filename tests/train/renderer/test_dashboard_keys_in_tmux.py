"""The dashboard of a real training run in a real terminal (tmux), where the process does not
own the terminal's foreground: every torchrun worker (a new session), and `timeout`'s command
(a background process group)."""

from __future__ import annotations

import os
import re
import signal
import sys
from pathlib import Path

import pytest

from tests.train.renderer.test_tmux import Tmux, pytestmark  # noqa: F401

SCRIPT = Path(__file__).with_name("dashboard_run.py")
# torchrun starts two interpreters that import torch: allow for a loaded machine.
START_S = 120.0


def start(tmux: Tmux, command: str) -> None:
    shell = f"OMP_NUM_THREADS=1 BURNISH_DIST_TIMEOUT=60 {command}; echo exit=$?; sleep 600"
    tmux("new-session", "-d", "-s", "demo", "-x", "120", "-y", "40", f"sh -c '{shell}'")


@pytest.mark.slow
def test_the_dashboard_draws_and_q_stops_a_torchrun_run(tmux: Tmux, tmp_path: Path) -> None:
    """10 iterations per rank and epoch, shorter than the metric gather (16): the dashboard
    hears of an epoch only at its end. It used to die on its first frame (the plot's x range
    of no point) and freeze at `Epoch -/1000`; `q` was never read (the worker runs in a new
    session) and, read, would never have been agreed on (no 16th iteration)."""
    artifacts = tmp_path / "run"
    torchrun = f"{sys.executable} -m torch.distributed.run --standalone --nproc-per-node=2"
    start(tmux, f"{torchrun} {SCRIPT} {artifacts}")
    tmux.wait_for(
        r"Epoch\s+[1-9]\d*/1000",  # counted from the epochs' ends
        r"Loss\s+-\s+\S+\s+-\s+\S+",  # train and valid epoch values
        r"─ Plot: Loss \(full history\) ─",
        r"[\u2801-\u28ff]",  # the epoch values are plotted
        r"━━ Train\s+━━ Valid",
        r"q stop",  # keys are read: the worker's parent (torchrun) has the foreground
        deadline_s=START_S,
    )
    tmux("send-keys", "-t", "demo", "q")
    screen = tmux.wait_for(r"exit=\d+", deadline_s=START_S)
    assert "exit=0" in screen, screen
    assert re.search(r"dashboard_run: \d+ True", screen), screen  # interrupted, on rank 0
    assert "failed to draw" not in screen and "Traceback" not in screen, screen
    log = (artifacts / "experiment.log").read_text()
    assert "Training interrupted: Training stopped by the user (q)" in log


def test_without_the_foreground_the_panel_says_how_to_stop(tmux: Tmux, tmp_path: Path) -> None:
    """`timeout` runs its command in a background process group: reading the terminal would
    stop it (SIGTTIN), and Ctrl-C reaches only the foreground job: the panel offers SIGINT."""
    start(tmux, f"timeout 300 {sys.executable} {SCRIPT} {tmp_path / 'run'}")
    screen = tmux.wait_for(r"kill -INT \d+ stop · keys not read here", r"Epoch\s+\d+/1000")
    assert "q stop" not in screen and "←/→" not in screen and "Ctrl-C stop" not in screen
    pid = int(re.search(r"kill -INT (\d+)", screen).group(1))
    os.kill(pid, signal.SIGINT)  # what the panel says: a graceful stop
    screen = tmux.wait_for(r"exit=\d+")
    assert "exit=0" in screen and re.search(r"dashboard_run: \d+ True", screen), screen

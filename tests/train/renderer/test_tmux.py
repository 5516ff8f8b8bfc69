"""The dashboard in a real terminal: tmux runs scripts/render_demo.py and we read its screen."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

REPO = Path(__file__).resolve().parents[3]
DEADLINE_S = 20.0


class Tmux:
    """A private tmux server (its own socket) with one 120x40 session."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        # The server (started by the first command) passes this environment to the pane.
        self.env = {**os.environ, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
        self.env.pop("BURNISH_RENDERER", None)

    def __call__(self, *args: str) -> str:
        command = ["tmux", "-u", "-S", str(self.socket), *args]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=10, check=True, env=self.env
        )
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "demo")

    def wait_for(self, *patterns: str, deadline_s: float = DEADLINE_S) -> str:
        """Poll the screen until every regex matches one capture; at the deadline, fail.

        Matching all patterns on one capture (not asserting on a later one) also copes with a
        capture taken while the app is halfway through writing a frame.
        """
        deadline = time.monotonic() + deadline_s
        while True:
            screen = self.screen()
            missing = [pattern for pattern in patterns if not re.search(pattern, screen)]
            if not missing:
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{missing} never appeared on screen; last screen:\n{screen}")
            time.sleep(0.05)


def test_dashboard_in_a_real_terminal(tmux: Tmux, tmp_path: Path) -> None:
    release = tmp_path / "release"
    demo = (
        f"{sys.executable} {REPO / 'scripts' / 'render_demo.py'} --renderer tui --epochs 100"
        f" --iterations 30 --valid-iterations 10 --step-s 0.01 --hold-after-stop {release}"
    )
    # After the demo: its exit status and the terminal modes, read from the same pty.
    shell = f"{demo}; echo exit=$?; stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)'"
    tmux(
        "new-session", "-d", "-s", "demo", "-x", "120", "-y", "40",
        f"sh -c \"{shell}; sleep 600\"",
    )  # fmt: skip

    tmux.wait_for(
        r"Loss\s+(\d+\.\d+\s+){3}\d+\.\d+",  # train batch/epoch, then valid batch/epoch
        r"Accuracy\s+(\d+\.\d+\s+){3}\d+\.\d+",
        r"Learning Rate\s+\d",
        r"Iteration Speed: Train \d+\.\d iter/s",
        r"Metric\s+batch\s+epoch\s+batch\s+epoch",
        *(f"─ {re.escape(title)} ─" for title in ("Metrics", "Status", "Controls", "Progress")),
        r"─ Plot: Loss \(full history\) ─",
        r"Mode\s+(Training|Validating)",
        r"Epoch\s+\d+/100",
        r"Items\s+\d+/(960|320) \(\d+%\)",
        r"\d+\.\d% \(ETA ",
        r"[\u2801-\u28ff]",  # the plot draws braille dots
        r"━━ Train\s+━━ Valid",
    )

    tmux("send-keys", "-t", "demo", "Right")
    tmux.wait_for(r"Plot: Accuracy \(full history\)")
    tmux("send-keys", "-t", "demo", "Left")
    tmux.wait_for(r"Plot: Loss \(full history\)")
    tmux("send-keys", "-t", "demo", "Up")
    tmux.wait_for(r"Plot: Loss \(current epoch\)")

    tmux("send-keys", "-t", "demo", "q")
    tmux.wait_for(r"Stopping\s+Training stopped by the user \(q\)", r"\(stopping\.\.\.\)")
    release.touch()

    screen = tmux.wait_for(r"exit=\d+\s+-?icanon\s+-?echo")
    assert "render_demo: stopped (Training stopped by the user (q))" in screen
    assert "exit=0" in screen
    assert "Metrics" not in screen, "the alternate screen was left"
    modes = screen.split("exit=0", 1)[1].split()
    assert modes == ["icanon", "echo"], f"terminal modes not restored: {modes}"

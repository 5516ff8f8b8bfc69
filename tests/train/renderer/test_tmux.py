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

    def wait_for(self, pattern: str) -> str:
        """Poll the screen until the regex `pattern` matches; at the deadline, fail showing it."""
        deadline = time.monotonic() + DEADLINE_S
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if time.monotonic() > deadline:
                pytest.fail(f"{pattern!r} never appeared on screen; last screen:\n{screen}")
            time.sleep(0.05)


@pytest.fixture
def tmux(tmp_path: Path):
    server = Tmux(tmp_path / "tmux.sock")
    yield server
    subprocess.run(["tmux", "-S", str(server.socket), "kill-server"], capture_output=True)


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

    # Wait for a row with all four values: train batch/epoch, then valid batch/epoch.
    screen = tmux.wait_for(r"Loss\s+(\d+\.\d+\s+){3}\d+\.\d+")
    for panel in ("Metrics", "Status", "Controls", "Progress", "Plot: Loss (full history)"):
        assert panel in screen
    for name in ("Loss", "Accuracy", "Learning Rate", "Iteration Speed"):
        assert name in screen
    assert re.search(r"Metric\s+batch\s+epoch\s+batch\s+epoch", screen)
    assert re.search(r"Mode\s+(Training|Validating)", screen)
    assert re.search(r"Epoch\s+\d+/100", screen)
    assert re.search(r"Items\s+\d+/(960|320) \(\d+%\)", screen)
    assert re.search(r"\d+\.\d% \(ETA ", screen)
    assert re.search(r"[\u2801-\u28ff]", screen), "the plot draws braille dots"
    assert "━━ Train" in screen

    tmux("send-keys", "-t", "demo", "Right")
    tmux.wait_for(r"Plot: Accuracy \(full history\)")
    tmux("send-keys", "-t", "demo", "Left")
    tmux.wait_for(r"Plot: Loss \(full history\)")
    tmux("send-keys", "-t", "demo", "Up")
    tmux.wait_for(r"Plot: Loss \(current epoch\)")

    tmux("send-keys", "-t", "demo", "q")
    screen = tmux.wait_for(r"Stopping\s+Training stopped by the user")
    assert "stopping..." in screen
    release.touch()

    screen = tmux.wait_for(r"exit=\d+\s+-?icanon\s+-?echo")
    assert "render_demo: stopped (Training stopped by the user (q))" in screen
    assert "exit=0" in screen
    assert "Metrics" not in screen, "the alternate screen was left"
    modes = screen.split("exit=0", 1)[1].split()
    assert modes == ["icanon", "echo"], f"terminal modes not restored: {modes}"

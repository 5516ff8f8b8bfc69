"""The tmux fixture shared by the real-terminal tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.train.renderer.test_tmux import Tmux


@pytest.fixture
def tmux(tmp_path: Path):
    server = Tmux(tmp_path / "tmux.sock")
    yield server
    subprocess.run(["tmux", "-S", str(server.socket), "kill-server"], capture_output=True)

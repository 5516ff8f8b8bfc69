"""Ctrl-C sent to a real example process: the way the examples' tests interrupt a run."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests import fork_server

REPO = Path(__file__).resolve().parents[2]


def start_and_interrupt(args: list[str]) -> tuple[int, str, str]:
    """Start `python ARGS` (forked: tests/fork_server.py), send it SIGINT once its renderer
    says training has begun, and return its exit code, stdout and stderr."""
    process = fork_server.popen(
        args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the CLI renderer flushes each line
        seen.append(line)
        if line.startswith("Training for"):
            process.send_signal(signal.SIGINT)
            break
    stdout, stderr = process.communicate(timeout=300)
    return process.returncode, "".join(seen) + stdout, stderr

"""Ctrl-C sent to a real example process: the way the examples' tests interrupt a run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests import fork_server

REPO = Path(__file__).resolve().parents[2]


def start_and_interrupt(
    args: list[str], marker: str = "Training for", forked: bool = True
) -> tuple[int, str, str]:
    """Start `python ARGS`, send it SIGINT once a line of its stdout starts with `marker` (the
    renderer's: training has begun), and return its exit code, stdout and stderr.

    Args:
        forked: start it from tests/fork_server.py (no second spent importing torch). A
            script that relies on Python's own `KeyboardInterrupt` needs False: in a forked
            child, SIGINT ended such a script silently with status 0 (the Learner's own
            SIGINT handler is not affected).
    """
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    if forked:
        process = fork_server.popen(args, cwd=REPO, **streams)
    else:
        path = os.pathsep.join([str(REPO), str(REPO / "src")])
        env = dict(os.environ, PYTHONPATH=path)
        process = subprocess.Popen([sys.executable, *args], cwd=REPO, env=env, **streams)
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # the CLI renderer flushes each line
        seen.append(line)
        if line.startswith(marker):
            process.send_signal(signal.SIGINT)
            break
    stdout, stderr = process.communicate(timeout=300)
    return process.returncode, "".join(seen) + stdout, stderr

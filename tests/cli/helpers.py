"""Run the real `burnish` command in a subprocess, on a pipe or in a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests import fork_server


def command(module: bool = False) -> list[str]:
    """The installed console script, or `python -m burnish`."""
    if module:
        return [sys.executable, "-m", "burnish"]
    return [str(Path(sys.executable).with_name("burnish"))]


def burnish(*args: str | Path, module: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """Run `burnish ARGS` as `python -m burnish ARGS`, forked from an interpreter that imported
    torch already (tests/fork_server.py): most commands load records, and a fresh interpreter
    spends a second importing torch. The installed console script itself is what
    `command()` runs (test_errors.py, `in_terminal`); `module=True` keeps a plain
    `python -m burnish` subprocess."""
    env = {**os.environ, "COLUMNS": "120"}
    options = {"capture_output": True, "text": True, "env": env, "timeout": 120, **kwargs}
    if module:
        return subprocess.run([*command(module), *map(str, args)], **options)
    return fork_server.run(["-m", "burnish", *map(str, args)], **options)


def assert_one_line_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 1, nothing on stdout, one line on stderr holding each fragment."""
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def in_terminal(*args: str | Path, timeout: float = 120) -> tuple[int, str, str]:
    """Run `burnish` with stdout on a pseudo-terminal: (exit status, terminal output, stderr)."""
    main, secondary = pty.openpty()
    env = {**os.environ, "COLUMNS": "120", "LINES": "40", "TERM": "xterm-256color"}
    process = subprocess.Popen(
        [*command(), *map(str, args)], stdout=secondary, stderr=subprocess.PIPE, env=env
    )
    os.close(secondary)
    output = bytearray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the program closed the terminal
                break
            if not chunk:
                break
            output += chunk
        elif process.poll() is not None:
            break
    os.close(main)
    stderr = process.communicate(timeout=max(1.0, deadline - time.monotonic()))[1]
    return process.returncode, output.decode("utf-8", "replace"), stderr.decode()

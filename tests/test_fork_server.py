"""The tests' fork server (tests/fork_server.py) starts a script as a fresh interpreter would:
its own argv, environment, working directory and streams, the exit status of each way a
script can end, its threads awaited and `atexit` run, SIGKILL and process groups; and two runs
in a row never share a hash seed."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import fork_server

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the fork server is Linux's")

SCRIPT = textwrap.dedent(
    """
    import atexit, os, sys, threading, time
    atexit.register(lambda: print("atexit", flush=True))
    mask = os.umask(0)
    print(sys.argv[1:], "torch" in sys.modules, os.environ.get("PROBE"), os.getcwd(), oct(mask))
    print("on stderr", file=sys.stderr)
    mode = sys.argv[1]
    if mode == "raise":
        raise ValueError("boom")
    if mode == "interrupt":
        raise KeyboardInterrupt
    if mode == "exit":
        sys.exit(int(sys.argv[2]) if sys.argv[2:] else "a message")
    if mode == "thread":
        threading.Thread(target=lambda: (time.sleep(0.3), print("thread", flush=True))).start()
    if mode == "stdin":
        print("read", sys.stdin.read().strip())
    if mode == "sleep":
        print(os.getpgid(0) == os.getpid(), flush=True)
        time.sleep(60)
    print("hash", hash("burnish"))
    """
)


@pytest.fixture
def script(tmp_path: Path) -> str:
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    return str(path)


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return fork_server.run(list(args), capture_output=True, text=True, timeout=60, **kwargs)


def test_argv_environment_directory_umask_and_streams(script, tmp_path):
    env = {**os.environ, "PROBE": "yes"}
    mask = os.umask(0o027)
    try:
        done = run(script, "plain", "x", env=env, cwd=tmp_path)
    finally:
        os.umask(mask)
    first = done.stdout.splitlines()[0]
    assert first == f"['plain', 'x'] True yes {tmp_path} 0o27"  # torch came with the fork
    assert done.stderr == "on stderr\n"
    assert done.returncode == 0 and done.stdout.endswith("atexit\n")


@pytest.mark.parametrize(
    ("args", "code", "stderr"),
    [
        (("raise",), 1, "ValueError: boom"),
        (("interrupt",), -signal.SIGINT, "KeyboardInterrupt"),
        (("exit", "3"), 3, "on stderr"),
        (("exit",), 1, "a message"),
    ],
)
def test_each_way_of_ending_gives_the_interpreters_exit_status(script, args, code, stderr):
    done = run(script, *args)
    assert done.returncode == code
    assert stderr in done.stderr
    assert done.stdout.endswith("atexit\n")  # atexit runs however the script ended


def test_threads_are_awaited_before_atexit(script):
    done = run(script, "thread")
    assert done.stdout.endswith("thread\natexit\n")


def test_stdin_is_the_pipe_given(script):
    assert "read hello" in run(script, "stdin", input="hello\n").stdout


def test_sigkill_kills_it_and_a_new_session_is_its_own_group(script):
    process = fork_server.popen(
        [script, "sleep"], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    assert process.stdout is not None
    process.stdout.readline()  # the argv line
    assert process.stdout.readline().strip() == "True"  # its process group is its own
    with pytest.raises(subprocess.TimeoutExpired):
        process.wait(timeout=0.2)
    os.killpg(process.pid, signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    assert process.poll() == -signal.SIGKILL


def test_two_runs_in_a_row_have_different_hash_seeds(script):
    seeds = [run(script, "plain").stdout.split("hash ")[1] for _ in range(4)]
    assert all(a != b for a, b in itertools.pairwise(seeds)), seeds


def test_an_import_time_setting_or_an_interpreter_option_gets_a_plain_subprocess(script):
    env = {**os.environ, "OMP_NUM_THREADS": "13"}  # torch reads it when imported
    process = fork_server.popen([script, "plain"], env=env, stdout=subprocess.PIPE)
    assert not isinstance(process, fork_server.ForkedPopen)
    process.communicate(timeout=60)
    process = fork_server.popen(["-c", "pass"])
    assert not isinstance(process, fork_server.ForkedPopen)
    process.wait(timeout=60)
    process = fork_server.popen([script, "plain"], stdout=subprocess.PIPE)
    assert isinstance(process, fork_server.ForkedPopen)
    process.communicate(timeout=60)

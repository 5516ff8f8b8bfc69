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
import threading
import time
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
    # Set by Inductor's first compilation in the test process, read at compile time: forked.
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.devnull + "-inductor"}
    process = fork_server.popen([script, "plain"], env=env, stdout=subprocess.PIPE)
    assert isinstance(process, fork_server.ForkedPopen)
    process.communicate(timeout=60)


RANK_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys, time
    rank = os.environ["RANK"]
    keys = sorted(k for k in os.environ if k in ("FORK_SERVER_SOCKETS", "FORK_SERVER_TURN"))
    print(f"rank {rank} pid {os.getpid()} torch {'torch' in sys.modules} session "
          f"{os.getsid(0) == os.getpid()} keys {keys} hash {hash('burnish')}", flush=True)
    mode = sys.argv[1]
    if mode == "kill" and rank == "1":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "exit" and rank == "1":
        sys.exit(7)
    if mode == "sleep" or (mode in ("kill", "exit") and rank == "0"):
        signal.signal(signal.SIGTERM, lambda *_: (print(f"rank {rank} SIGTERM", flush=True),
                                                  sys.exit(0)))
        time.sleep(60)
    """
)
TORCHRUN = ["--standalone", "--nproc_per_node=2", "--monitor-interval=0.2"]


@pytest.fixture
def rank_script(tmp_path: Path) -> str:
    path = tmp_path / "ranks.py"
    path.write_text(RANK_SCRIPT)
    return str(path)


def test_torchrun_forks_each_rank_a_session_leader_with_its_own_hash_seed(rank_script):
    done = fork_server.torchrun(TORCHRUN, [rank_script, "plain"], capture_output=True,
                                text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = sorted(line for line in done.stdout.splitlines() if line.startswith("rank "))
    assert len(lines) == 2, done.stdout
    for rank, line in enumerate(lines):  # forked: torch is there before the script imports it
        assert line.startswith(f"rank {rank} ") and "torch True session True keys []" in line
    assert lines[0].split("hash ")[1] != lines[1].split("hash ")[1]


def test_a_rank_killed_by_a_signal_is_seen_by_torchrun_as_killed_and_the_other_stopped(
    rank_script,
):
    done = fork_server.torchrun(TORCHRUN, [rank_script, "kill"], capture_output=True,
                                text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    assert "exitcode  : -9" in done.stderr, done.stderr[-3000:]  # torchrun's failure table
    assert "rank 0 SIGTERM" in done.stdout  # torchrun's SIGTERM reached the forked rank 0
    done = fork_server.torchrun(TORCHRUN, [rank_script, "exit"], capture_output=True,
                                text=True, timeout=120)  # fmt: skip
    assert "exitcode  : 7" in done.stderr, done.stderr[-3000:]


def test_a_rank_dies_with_its_client_and_a_client_without_a_server_runs_the_script_itself(
    rank_script, tmp_path
):
    env = {**os.environ, "RANK": "0", "OMP_NUM_THREADS": "1"}
    fork_server.torchrun(TORCHRUN, [rank_script, "plain"], capture_output=True, timeout=120)
    env[fork_server.SOCKETS_KEY] = os.pathsep.join(
        server.path for server in fork_server._pools[fork_server._import_settings(env)]
    )
    client = subprocess.Popen(
        [sys.executable, "-u", fork_server.__file__, "--rank", rank_script, "sleep"],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert client.stdout is not None
    line = client.stdout.readline()
    assert "torch True" in line, line  # forked
    rank_pid = int(line.split("pid ")[1].split()[0])
    assert rank_pid != client.pid
    client.kill()  # as torchrun's last resort
    client.wait(timeout=30)
    for _ in range(300):  # the server SIGKILLs the rank when its client's socket closes
        try:
            os.kill(rank_pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"the rank {rank_pid} outlived its client")
    del env[fork_server.SOCKETS_KEY]
    alone = subprocess.run(
        [sys.executable, "-u", fork_server.__file__, "--rank", rank_script, "plain"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert alone.returncode == 0 and "torch False" in alone.stdout, alone


def test_two_threads_can_wait_for_one_child(script):
    process = fork_server.popen([script, "thread"], stdout=subprocess.PIPE, text=True)
    codes: list[int] = []
    waiter = threading.Thread(target=lambda: codes.append(process.wait()))
    waiter.start()
    stdout, _ = process.communicate(timeout=60)  # waits too, after reading the pipe
    waiter.join(timeout=60)
    assert codes == [0] and process.returncode == 0 and stdout.endswith("atexit\n")


def test_the_childs_peak_resident_memory_comes_with_its_exit_status(tmp_path):
    """`max_rss_kib` is the child's own peak, as the kernel counts it (`VmHWM` at its end)."""
    grow = tmp_path / "grow.py"
    grow.write_text(  # every page of the block written: resident
        "import sys\nblock = bytearray(256 << 20)\nblock[::4096] = b'x' * len(block[::4096])\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "print(int(status.split()[0]))\n"
    )
    process = fork_server.popen([str(grow)], stdout=subprocess.PIPE, text=True)
    stdout, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and process.max_rss_kib is not None
    assert abs(process.max_rss_kib - int(stdout)) < 4 << 10  # KiB: the kernel's two counts
    assert process.max_rss_kib > 256 << 10


WORKER = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from tests import fork_server
    done = fork_server.run([sys.argv[2]], capture_output=True, text=True, timeout=60)
    print(done.stdout.strip(), sorted(fork_server._pools) != [], flush=True)
    """
)
OWNER = textwrap.dedent(
    """
    import os, subprocess, sys, tempfile
    os.environ["FORK_SERVER_DIRECTORY"] = tempfile.mkdtemp()
    os.environ["FORK_SERVER_OWNER"] = str(os.getpid())
    os.environ["PYTHONHASHSEED"] = "0"  # one server
    for _ in range(2):  # two workers, one after the other: the second finds the first's server
        done = subprocess.run([sys.executable, *sys.argv[1:]], capture_output=True, text=True)
        server = int(done.stdout.split()[0])
        os.kill(server, 0)  # alive after the worker that started it has ended
        print(server, flush=True)
    """
)


def test_the_processes_of_a_session_share_servers_that_end_with_its_first_process(tmp_path):
    """pytest-xdist's workers share the servers (one set per import-time settings); a server
    outlives the worker that started it and ends with the session's first process."""
    parent = tmp_path / "parent.py"
    parent.write_text("import os\nprint(os.getppid())\n")  # a fork's parent: its server
    worker, owner = tmp_path / "worker.py", tmp_path / "owner.py"
    worker.write_text(WORKER)
    owner.write_text(OWNER)
    repo = str(Path(fork_server.__file__).parents[1])
    # This test process's session: a worker started now forks from the servers it started.
    ours = {int(run(str(parent)).stdout) for _ in range(2)}
    assert len(ours) == 2  # two servers, in turn
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_WORKER"}
    for _ in range(2):
        done = subprocess.run([sys.executable, str(worker), repo, str(parent)], env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert int(done.stdout.split()[0]) in ours, done
    # A session of its own: its server outlives its workers and ends with it.
    done = subprocess.run([sys.executable, str(owner), str(worker), repo, str(parent)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = map(int, done.stdout.split())
    assert first == second
    deadline = time.monotonic() + 30
    while Path(f"/proc/{first}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{first}").exists()

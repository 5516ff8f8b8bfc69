"""Python scripts started as forks of an interpreter that has imported torch and burnish.

A test that runs a script many times (kill it, resume it, kill it again) spends a second of
each run importing torch. `popen([script, *args], ...)` takes the arguments and keywords of
`subprocess.Popen([sys.executable, script, *args], ...)` and returns a real `subprocess.Popen`
(pipes, `communicate`, `wait`, `send_signal`, `returncode`) whose process is forked from a
server that did those imports once; `run` is `subprocess.run` likewise. The process is a
real one: it has its own pid, is killed by SIGKILL, runs the script as `__main__` with its own
argv, environment, working directory, umask and standard streams, waits for its threads and
runs its `atexit` functions when the script ends, and exits with the status a fresh
interpreter would
(an uncaught exception: 1, after the traceback; an uncaught KeyboardInterrupt: killed by
SIGINT).

What a fork shares with its server, and how that is kept from weakening a test:
- The hash seed of `str` is drawn once per interpreter. Two servers (each its own seed) take
  turns, so two runs in a row never share a seed, as two fresh interpreters would not.
- Settings read when torch is imported (`OMP_*`, `MKL_*`, `TORCH_*`, `PYTORCH_*`, `CUDA_*`,
  `PYTHON*`): a run whose environment differs from the server's in one of them is started as
  a plain subprocess instead.
- What the server did before it forks: the modules of `PRELOAD` are imported (a script that
  would not import them finds them there), and `WARM` filled tests/helpers.py's MNIST cache
  (read-only arrays, shared copy-on-write).
- Anything but `python SCRIPT ...` or `python -m MODULE ...` (interpreter options, `-c`), or
  with a Popen setting a fork does not apply (`preexec_fn`, `umask`, `pass_fds`, ...), is
  started as a plain subprocess too.

`torchrun(options, [script, *args])` runs `python -m torch.distributed.run OPTIONS script ARGS`
with the agent forked likewise and each rank forked too: torchrun, unchanged, starts
`python -u fork_server.py --rank script ARGS` for each rank, a stdlib-only client that asks a
server (its import-time settings those of the ranks: torchrun's `OMP_NUM_THREADS=1`) to fork
the rank with the client's argv, environment and streams, passes the signals torchrun sends
it on to the rank, and exits as the rank did (killed by the same signal, or its exit status).
When the client dies (torchrun's SIGKILL), the server SIGKILLs the rank. Ranks of one group,
and a restarted group, alternate between the two servers' hash seeds. A client that finds no
server for its settings runs the script itself (`exec python -u script`).

The server runs one child per request and tells its exit status (and its peak resident memory,
`ForkedPopen.max_rss_kib`) over the request's socket.

The processes of one test session share the servers: tests/conftest.py gives the session's
first process (pytest-xdist's controller, or the only process) a directory for their sockets,
which the workers inherit. The first worker to need servers for some import-time settings
starts them (under a lock in that directory); the others find their sockets there. A server
kills its children and exits when that first process ends (it watches it with a pidfd), not
when the worker that started it does. Outside a session (no directory inherited), a process
starts servers of its own, stopped when it exits.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib
import io
import itertools
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Any

PRELOAD = ("numpy", "torch", "burnish", "burnish.train", "burnish.record", "burnish.optim")
# burnish's packages import their modules lazily (PEP 562): the ones every run loads.
PRELOAD += (
    "burnish.train.settings.learner_builder",
    "burnish.train.loop.run",
    "burnish.train.renderer",
)
PRELOAD += ("burnish.train.metric", "burnish.data.dataloader", "burnish.lr_scheduler", "rich")
# `torch.use_deterministic_algorithms` (the runs' `.deterministic()`) imports Inductor and
# Dynamo the first time it is called: another second per run.
PRELOAD += ("torch._inductor",)
# Called once the preloads are in: what every run would read again (tests/helpers.py's MNIST).
WARM = ("tests.helpers:read_mnist",)
IMPORT_TIME_SETTINGS = ("OMP_", "MKL_", "KMP_", "TORCH", "PYTORCH_", "CUDA_", "PYTHON")
# Read at run time, not import time: what torchrun's agent sets on its workers under those
# prefixes, and the directory Inductor's first compilation in a process sets in its environment.
RUN_TIME_SETTINGS = ("TORCHELASTIC_", "TORCH_NCCL_", "TORCHINDUCTOR_CACHE_DIR")
# A rank client's servers (their socket paths) and its group's turn, in its environment.
SOCKETS_KEY, TURN_KEY = "FORK_SERVER_SOCKETS", "FORK_SERVER_TURN"
# A test session's servers: the directory of their sockets, and the process whose end ends
# them (tests/conftest.py sets both in the first process, which pytest-xdist's workers inherit).
DIRECTORY_KEY, OWNER_KEY = "FORK_SERVER_DIRECTORY", "FORK_SERVER_OWNER"
SERVERS = 2  # each with its own hash seed, taking turns
# Popen settings a fork does not apply: such a run is a plain subprocess.
UNSUPPORTED = {"preexec_fn", "pass_fds", "umask", "user", "group", "extra_groups", "process_group"}
UNSUPPORTED |= {"executable", "shell", "close_fds", "restore_signals"}


# -- the client (the test process) ----------------------------------------------------------


class ForkedPopen(subprocess.Popen):
    """A `subprocess.Popen` whose child is forked by a fork server instead of exec'd."""

    def __init__(self, args: list[str], server: _Server, **kwargs: Any) -> None:
        self._server = server
        self._new_session = bool(kwargs.get("start_new_session"))
        self._connection: socket.socket | None = None
        self._status_lock = threading.Lock()  # one thread reads the exit status
        self.max_rss_kib: int | None = None  # the child's peak resident memory, once it ended
        super().__init__(args, **kwargs)

    def _execute_child(  # type: ignore[override]  # Popen's private hook, POSIX signature
        self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
        creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite, *rest,
    ) -> None:  # fmt: skip
        devnull = os.open(os.devnull, os.O_RDONLY) if p2cread == -1 else None
        streams = [
            p2cread if devnull is None else devnull,
            c2pwrite if c2pwrite != -1 else 1,
            errwrite if errwrite != -1 else 2,
        ]
        request = {
            "argv": list(args)[1:],
            "env": dict(os.environ if env is None else env),
            "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
            "new_session": self._new_session,
            "umask": _current_umask(),
        }
        try:
            self._connection, self.pid = self._server.start(request, streams)
        finally:
            if devnull is not None:
                os.close(devnull)
            self._close_child_ends((p2cread, p2cwrite), (c2pwrite, c2pread), (errwrite, errread))

    def _close_child_ends(self, *pipes: tuple[int, int]) -> None:
        """Close the child's ends of the pipes made for it, as Popen does after a fork."""
        devnull = getattr(self, "_devnull", None)
        for child_end, parent_end in pipes:
            if child_end != -1 and parent_end != -1 and child_end != devnull:
                os.close(child_end)
        if devnull is not None:
            os.close(devnull)
        self._closed_child_pipe_fds = True

    def _internal_poll(self, _deadstate=None, **_: Any):  # type: ignore[override]
        if not self._status_lock.acquire(blocking=False):
            return None  # another thread is waiting (as Popen's own poll answers)
        try:
            if self.returncode is None and self._connection is not None:
                self._connection.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    self._read_status()
        finally:
            self._status_lock.release()
        return self.returncode

    def _wait(self, timeout):  # type: ignore[override]
        if not self._status_lock.acquire(timeout=-1 if timeout is None else timeout):
            raise subprocess.TimeoutExpired(self.args, timeout)
        try:
            if self.returncode is not None or self._connection is None:
                return self.returncode
            self._connection.settimeout(timeout)
            try:
                self._read_status()
            except TimeoutError:
                raise subprocess.TimeoutExpired(self.args, timeout) from None
        finally:
            self._status_lock.release()
        return self.returncode

    def _read_status(self) -> None:
        assert self._connection is not None
        message = self._connection.recv(64)
        if not message:
            raise RuntimeError("the fork server ended before the child's exit status came")
        code, max_rss = message.split()
        self.returncode, self.max_rss_kib = int(code), int(max_rss)
        self._connection.close()
        self._connection = None


class _Server:
    """One fork server process, at `path`: started by this process or by another process of
    the test session (another pytest-xdist worker)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.process: subprocess.Popen | None = None  # started by this process

    def launch(self, environment: dict[str, str]) -> None:
        # Its standard error goes to a file: it may outlive this process and its streams.
        with open(self.path + ".log", "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, __file__, self.path, str(_owner()), *PRELOAD],
                env=environment,  # as the server imports torch
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,  # "ready", then closed
                stderr=log,
                start_new_session=True,  # a Ctrl-C or a signal to this process group spares it
            )

    def wait_ready(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        ready = self.process.stdout.readline()
        self.process.stdout.close()
        if ready != b"ready\n":
            with open(self.path + ".log", errors="replace") as log:
                raise RuntimeError(f"the fork server did not start:\n{log.read()[-3000:]}")

    def start(self, request: dict[str, Any], streams: list[int]) -> tuple[socket.socket, int]:
        return _request_fork(self.path, request, streams)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


# The servers this process uses, by the import-time settings they were started with: those of
# its environment (found or started at its first fork), those of torchrun's ranks (at its first
# torchrun), and those a test asks for (`new_servers`).
_pools: dict[tuple[tuple[str, str], ...], list[_Server]] = {}
_turns = itertools.count()
_lock = threading.Lock()
_own_directory: str | None = None  # the sockets' directory, outside a test session


def popen(args: list[str], *, new_servers: bool = False, **kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen([sys.executable, *args], **kwargs)`, forked from a fork server.

    A run whose import-time settings no server has is a plain subprocess, unless
    `new_servers`: then servers with its settings start (worth it for settings many runs share).
    """
    if not _forkable(args, kwargs):
        return subprocess.Popen([sys.executable, *args], **kwargs)
    env = kwargs.get("env") or os.environ
    with _lock:
        _pool(os.environ)
        pool = _pool(env) if new_servers else _pools.get(_import_settings(env))
    if pool is None:
        return subprocess.Popen([sys.executable, *args], **kwargs)
    return ForkedPopen([sys.executable, *args], pool[next(_turns) % len(pool)], **kwargs)


def torchrun(
    options: list[str], args: list[str], *, env: dict[str, str] | None = None, **kwargs: Any
) -> subprocess.CompletedProcess:
    """`subprocess.run([python, -m, torch.distributed.run, *options, *args], **kwargs)`: the
    agent and every rank forked (`run`'s keywords: `capture_output`, `timeout`, ...)."""
    command, env = torchrun_command(options, args, env)
    return run(command, env=env, **kwargs)


def torchrun_command(
    options: list[str], args: list[str], env: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """`torchrun`'s command and environment for `popen` or `run`: the ranks' servers started."""
    env = dict(os.environ if env is None else env)
    ranks = {**env, "OMP_NUM_THREADS": env.get("OMP_NUM_THREADS", "1")}  # as torchrun sets
    with _lock:
        pool = _pool(ranks)
    env[SOCKETS_KEY] = os.pathsep.join(server.path for server in pool)
    env[TURN_KEY] = str(next(_turns))
    return ["-m", "torch.distributed.run", *options, __file__, "--rank", *args], env


def ranks(args: list[str], nproc: int, **kwargs: Any) -> subprocess.CompletedProcess:
    """`python SCRIPT ARGS` alone (`nproc` 1) or under `torchrun --standalone
    --nproc_per_node=NPROC`, forked either way, with collectives that time out after 60 s and
    one OpenMP thread; `run`'s keywords."""
    env = {**kwargs.pop("env", os.environ), "BURNISH_DIST_TIMEOUT": "60", "OMP_NUM_THREADS": "1"}
    if nproc > 1:
        options = ["--standalone", f"--nproc_per_node={nproc}"]
        return torchrun(options, args, env=env, **kwargs)
    return run(args, env=env, **kwargs)


def _pool(env: Any) -> list[_Server]:
    """The servers started with `env`'s import-time settings: those the session has, or
    started now."""
    key = _import_settings(env)
    if key not in _pools:
        _pools[key] = _session_pool(key)
    return _pools[key]


def _session_pool(key: tuple[tuple[str, str], ...]) -> list[_Server]:
    """The session's servers for `key`, started by the first process of the session to ask."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(IMPORT_TIME_SETTINGS)}
    environment = {**base, **dict(key)}
    # Side by side, each with its own hash seed; a seed set by PYTHONHASHSEED is one seed.
    fixed = environment.get("PYTHONHASHSEED", "random") != "random"
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
    paths = [os.path.join(_directory(), f"{name}-{i}.sock") for i in range(1 if fixed else SERVERS)]
    servers = [_Server(path) for path in paths]
    with open(os.path.join(_directory(), f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be starting them: wait for it
        if all(os.path.exists(path) for path in paths):  # a server binds its path when ready
            return servers
        for server in servers:
            server.launch(environment)
            if _owner() == os.getpid():  # they end with this process: stopped at its exit
                atexit.register(server.stop)
        for server in servers:
            server.wait_ready()
    return servers


def _owner() -> int:
    """The process whose end ends the servers: the session's (`OWNER_KEY`), else this one."""
    return int(os.environ.get(OWNER_KEY, os.getpid()))


def _directory() -> str:
    """Where the servers' sockets are: the session's (`DIRECTORY_KEY`), else this process's."""
    global _own_directory
    if DIRECTORY_KEY in os.environ:
        return os.environ[DIRECTORY_KEY]
    if _own_directory is None:
        _own_directory = tempfile.mkdtemp(prefix="burnish-forks-")
        atexit.register(shutil.rmtree, _own_directory, True)
    return _own_directory


def run(args: list[str], *, input=None, timeout=None, check=False, capture_output=False, **kwargs):
    """`subprocess.run([sys.executable, *args], ...)`, forked from a fork server."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise
    result = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    if check:
        result.check_returncode()
    return result


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _forkable(args: list[str], kwargs: dict[str, Any]) -> bool:
    if sys.platform != "linux" or not args or set(kwargs) & UNSUPPORTED:
        return False
    return not args[0].startswith("-") or (args[0] == "-m" and len(args) > 1)


def _import_settings(env: Any) -> tuple[tuple[str, str], ...]:
    return tuple(
        sorted(
            (k, v)
            for k, v in env.items()
            if k.startswith(IMPORT_TIME_SETTINGS) and not k.startswith(RUN_TIME_SETTINGS)
        )
    )


def _request_fork(
    path: str, request: dict[str, Any], streams: list[int]
) -> tuple[socket.socket, int]:
    """Ask the server at `path` to fork `request`; its connection (the exit status comes on it)
    and the child's pid. OSError if there is no server there or it refused."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        socket.send_fds(connection, [json.dumps(request).encode()], streams)
        answer = json.loads(connection.recv(1 << 16) or b'{"error": "the server closed"}')
    except BaseException:
        connection.close()
        raise
    if "error" in answer:
        connection.close()
        raise OSError(answer["error"])
    return connection, int(answer["pid"])


# -- a torchrun rank's client -----------------------------------------------------------------

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1)
FORWARDED += (signal.SIGUSR2,)


def rank(argv: list[str]) -> None:
    """`python -u SCRIPT ARGS` as a torchrun worker, forked from a server: never returns."""
    paths = os.environ.pop(SOCKETS_KEY, "").split(os.pathsep)
    turn = int(os.environ.pop(TURN_KEY, "0"))
    turn += int(os.environ.get("LOCAL_RANK", "0"))
    turn += int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    request = {
        "argv": argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "new_session": True,  # torchrun makes each worker a session leader
        "umask": _current_umask(),
        "tied": True,
        "unbuffered": True,
    }
    try:
        connection, pid = _request_fork(paths[turn % len(paths)], request, [0, 1, 2])
    except OSError:
        os.execv(sys.executable, [sys.executable, "-u", *argv])
    for forwarded in FORWARDED:
        signal.signal(forwarded, lambda number, _: _signal(pid, number))
    status = connection.recv(64)  # retried after each forwarded signal (PEP 475)
    if not status:  # the server is gone
        _signal(pid, signal.SIGKILL)
        os._exit(1)
    code = int(status.split()[0])
    if code < 0:  # killed by a signal: so is the client
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP have no handler
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code & 0xFF)


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, number)


# -- the server -------------------------------------------------------------------------------


def serve(path: str, owner: int, preload: list[str]) -> None:
    owner_end = os.pidfd_open(owner)  # readable once the owner has ended
    settings = _import_settings(os.environ)  # as torch is imported with
    for name in preload:
        __import__(name)
    _warm(WARM)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    selector.register(owner_end, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the pipe closed: the process that started it may end before it does
    os.close(devnull)
    while True:
        for key, _ in selector.select():
            if key.fileobj is listener:
                connection, _ = listener.accept()
                sockets = [listener, connection, *children.values()]
                pid, tied = _fork(connection, settings, sockets, [wake_read, wake_write, selector])
                if pid:
                    children[pid] = connection
                if tied:  # its client going away (its socket closed) kills it
                    selector.register(connection, selectors.EVENT_READ, pid)
            elif key.fileobj is wake_read:
                os.read(wake_read, 4096)
            elif key.fileobj == owner_end:  # the test session is over
                for pid in children:
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
                return
            else:  # a tied child's client is gone
                selector.unregister(key.fileobj)
                if key.data in children:
                    os.kill(key.data, signal.SIGKILL)
        _reap(children, selector)


def _warm(names: tuple[str, ...]) -> None:
    """Call each `module:function` (the repository's root on `sys.path` meanwhile only)."""
    root = str(Path(__file__).resolve().parents[1])
    sys.path.append(root)
    try:
        for name in names:
            module, function = name.split(":")
            getattr(importlib.import_module(module), function)()
    finally:
        sys.path.remove(root)


def _fork(
    connection: socket.socket,
    settings: tuple[tuple[str, str], ...],
    sockets: list[socket.socket],
    others: list[Any],
) -> tuple[int, bool]:
    """Fork the child `connection` asks for; its pid (0 if refused) and whether it is tied."""
    message, streams, _, _ = socket.recv_fds(connection, 1 << 20, 3)
    request = json.loads(message)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        if _import_settings(request["env"]) != settings:
            raise OSError("its import-time settings are not this server's")
        pid = os.fork()
    except OSError as error:
        for stream in streams:
            os.close(stream)
        connection.send(json.dumps({"error": str(error)}).encode())
        connection.close()
        return 0, False
    if pid == 0:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for open_socket in sockets:
            open_socket.close()
        wake_read, wake_write, selector = others
        selector.close()
        os.close(wake_read)
        os.close(wake_write)
        _run(request, streams)  # never returns
    for stream in streams:
        os.close(stream)
    connection.send(json.dumps({"pid": pid}).encode())
    return pid, bool(request.get("tied"))


def _reap(children: dict[int, socket.socket], selector: selectors.BaseSelector) -> None:
    while children:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is not None:
            with contextlib.suppress(KeyError):
                selector.unregister(connection)
            with contextlib.suppress(OSError):  # the test process may have stopped listening
                code = os.waitstatus_to_exitcode(status)
                connection.send(f"{code} {usage.ru_maxrss}".encode())
            connection.close()


def _run(request: dict[str, Any], streams: list[int]) -> None:
    """In the child: become `python ARGV...` and exit as the interpreter would."""
    if request["new_session"]:
        os.setsid()
    for target, stream in enumerate(streams):
        os.dup2(stream, target)
    for stream in set(streams) - {0, 1, 2}:
        os.close(stream)
    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    unbuffered = bool(request.get("unbuffered"))  # python -u
    sys.stdout = sys.__stdout__ = _text_stream(1, os.isatty(1), unbuffered)
    sys.stderr = sys.__stderr__ = _text_stream(2, True, unbuffered)
    argv = request["argv"]
    code: int | str = 0
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = request["cwd"]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            sys.path[0] = str(Path(argv[0]).resolve().parent)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exit_request:
        code = _exit_code(exit_request.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code = "SIGINT"
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    _shutdown()
    if code == "SIGINT":  # as Python does after an uncaught KeyboardInterrupt
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(int(code) & 0xFF)


def _text_stream(fd: int, line_buffering: bool, unbuffered: bool) -> io.TextIOWrapper:
    raw = io.FileIO(fd, "w", closefd=False)
    errors = "backslashreplace" if fd == 2 else "strict"
    binary = raw if unbuffered else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        binary,  # type: ignore[arg-type]  # a raw FileIO, as CPython's own -u
        line_buffering=line_buffering,
        write_through=unbuffered,
        errors=errors,
    )


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _shutdown() -> None:
    """The interpreter's exit: wait for non-daemon threads, run atexit, flush the streams."""
    try:
        threading._shutdown()  # type: ignore[attr-defined]
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


if __name__ == "__main__":
    if sys.argv[1] == "--rank":
        rank(sys.argv[2:])
    else:
        serve(sys.argv[1], int(sys.argv[2]), sys.argv[3:])

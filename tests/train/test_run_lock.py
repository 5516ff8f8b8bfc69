"""One run per artifact directory: real processes contend for the lock of `burnish.run_lock`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.run_lock import LOCK_NAME, RunLock, find_run_directory

from tests import fork_server
from tests.train.helpers import Mlp, builder, loaders

SCRIPT = Path(__file__).with_name("lock_run.py")
pytestmark = pytest.mark.timeout(600)


def start(artifact_dir: Path, *flags: str, new_session: bool = False) -> subprocess.Popen:
    return fork_server.popen(
        [str(SCRIPT), str(artifact_dir), *flags],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=new_session,
    )


def group_members(group: int) -> list[int]:
    """The pids of the live processes in a process group (from /proc)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group and fields[0] != "Z":  # state, ppid, pgrp
                members.append(int(stat.parent.name))
    return members


def wait_holding(process: subprocess.Popen) -> None:
    """Block until the run prints `holding` (it then waits on its standard input)."""
    line = process.stdout.readline()
    assert line == "holding\n", line + process.stderr.read()


def finish(process: subprocess.Popen) -> str:
    stdout, stderr = process.communicate("go\n", timeout=300)
    assert process.returncode == 0, stderr[-3000:]
    return stdout


def files(artifact_dir: Path) -> dict[str, bytes]:
    """Every metric log and checkpoint file of a run, by relative path."""
    return {
        str(path.relative_to(artifact_dir)): path.read_bytes()
        for path in sorted(artifact_dir.rglob("*"))
        if path.is_file()
        and (
            (path.suffix == ".log" and "experiment" not in path.name) or "checkpoint" in path.parts
        )
    }


def test_a_second_run_fails_at_once_and_leaves_the_first_untouched(tmp_path):
    alone = tmp_path / "alone"
    finish(start(alone))
    shared = tmp_path / "shared"
    first = start(shared, "--hold-at", "2")
    wait_holding(first)  # epoch 1 is written, epoch 2 has begun: the lock is held
    second = fork_server.run(
        [str(SCRIPT), str(shared)], capture_output=True, text=True, timeout=300
    )
    assert second.returncode != 0
    assert "RunLockedError" in second.stderr
    assert repr(str(shared)) in second.stderr
    assert f"process {first.pid} on host {socket.gethostname()}" in second.stderr
    assert "Use another artifact directory" in second.stderr
    assert "done" in finish(first)
    assert files(shared) == files(alone)
    assert files(alone)  # logs and checkpoints were compared


def test_a_killed_holder_never_blocks_resume(tmp_path):
    """SIGKILL while data-loader workers live, then resume at once: the lock died with it."""
    artifact_dir = tmp_path / "run"
    first = start(artifact_dir, "--hold-at", "2", "--workers", "2", new_session=True)
    wait_holding(first)
    workers = [pid for pid in group_members(first.pid) if pid != first.pid]
    assert len(workers) == 2
    try:
        # A worker ends at its next check of its parent (every 5 s): stopped, it lives on,
        # with whatever it inherited from the run, throughout the resume.
        for worker in workers:
            os.kill(worker, signal.SIGSTOP)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=60) == -signal.SIGKILL
        for pipe in (first.stdin, first.stdout, first.stderr):  # the workers hold them open
            pipe.close()
        assert "done epochs=2" in finish(start(artifact_dir))  # from epoch 1's checkpoint
        assert sorted(group_members(first.pid)) == sorted(workers)  # alive all along
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(first.pid, signal.SIGKILL)
    holder = json.loads((artifact_dir / LOCK_NAME).read_text())
    assert holder["pid"] != first.pid  # the resumed run took the lock and wrote itself in


def _burnish(*args: str) -> subprocess.CompletedProcess:
    """`python -m burnish ARGS`, forked (tests/fork_server.py)."""
    return fork_server.run(["-m", "burnish", *args], capture_output=True, text=True, timeout=120)


def test_read_only_commands_work_on_a_live_run(tmp_path):
    artifact_dir = tmp_path / "run"
    first = start(artifact_dir, "--hold-at", "2")
    wait_holding(first)
    for command in (["summary", str(artifact_dir)], ["report", str(artifact_dir)]):
        done = _burnish(*command)
        assert done.returncode == 0, done.stderr
    model = artifact_dir / "checkpoint" / "epoch-1" / "model.mpk"
    inspect = _burnish("inspect", str(model))
    assert inspect.returncode == 0, inspect.stderr
    converted = artifact_dir / "converted"
    convert = _burnish("convert", str(model), str(converted), "--to", "safetensors")
    assert convert.returncode != 0
    assert "is in use by process" in convert.stderr
    assert not list(artifact_dir.glob("converted*"))
    finish(first)
    convert = _burnish("convert", str(model), str(converted), "--to", "safetensors")
    assert convert.returncode == 0, convert.stderr


class FailingMlp(Mlp):
    def train_step(self, batch):
        raise RuntimeError("train_step failed on purpose")


def test_the_lock_is_released_after_an_exception(tmp_path):
    bn.seed(0)
    learner = builder(tmp_path, epochs=1).build(FailingMlp(), AdamConfig().init(), 1e-3)
    with pytest.raises(RuntimeError, match="on purpose"):
        learner.fit(*loaders(train_items=64, valid_items=32))
    with RunLock(tmp_path) as lock:  # free again
        assert lock.held


def test_a_second_fit_in_the_same_process_is_refused_while_the_first_holds(tmp_path):
    with RunLock(tmp_path):
        learner = builder(tmp_path, epochs=1).build(Mlp(), AdamConfig().init(), 1e-3)
        with pytest.raises(bn.RunLockedError, match=f"process {os.getpid()} on host"):
            learner.fit(*loaders(train_items=64, valid_items=32))
    assert not (tmp_path / "train").exists()  # refused before writing anything


def test_lock_file_states(tmp_path):
    lock = RunLock(tmp_path / "new")
    lock.acquire()
    lock.acquire()  # idempotent
    with pytest.raises(bn.RunLockedError, match="Use another artifact directory"):
        RunLock(tmp_path / "new").acquire()
    lock.release()
    lock.release()
    assert find_run_directory(tmp_path / "new" / "sub" / "file.mpk") == tmp_path / "new"
    assert find_run_directory(tmp_path) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / LOCK_NAME).write_text("not json")
    with RunLock(empty), pytest.raises(bn.RunLockedError, match="process"):
        RunLock(empty).acquire()  # a file left unreadable by a crash is just a file to lock
    mode = (tmp_path / "new" / LOCK_NAME).stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_ranks_agree_when_rank_0_cannot_lock(tmp_path):
    """Under two gloo ranks, a locked directory fails every rank with the lock error."""
    script = tmp_path / "ranks.py"
    script.write_text(RANKS.format(repo=str(Path(__file__).resolve().parents[2])))
    artifact_dir = tmp_path / "run"
    with RunLock(artifact_dir):
        done = fork_server.ranks(
            [str(script), str(artifact_dir)], 2, capture_output=True, text=True, timeout=300
        )
    assert done.returncode != 0
    assert done.stderr.count("RunLockedError") >= 2, done.stderr[-4000:]
    assert "Rank 0 could not lock" in done.stderr
    assert not (artifact_dir / "train").exists()


RANKS = """
import sys
sys.path.insert(0, {repo!r})
import torch
from burnish.optim import AdamConfig
from tests import fork_server
from tests.train.helpers import Mlp, builder, loaders
torch.set_num_threads(1)
learner = builder(sys.argv[1], epochs=1).build(Mlp(), AdamConfig().init(), 1e-3)
learner.fit(*loaders(train_items=64, valid_items=32))
"""


def test_checkpoint_files_keep_default_recorder(tmp_path):
    """The holder's checkpoints load: the lock file is no part of a checkpoint."""
    finish(start(tmp_path / "run"))
    record = DefaultRecorder().load(tmp_path / "run" / "checkpoint" / "epoch-2" / "model.mpk")
    assert any(isinstance(v, torch.Tensor) for v in _leaves(record))


def _leaves(tree):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    else:
        yield tree

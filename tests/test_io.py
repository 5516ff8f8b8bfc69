"""Atomic writes: a failure at any point leaves the previous file byte-identical, no temp file."""

from __future__ import annotations

import errno
import os

import pytest
import torch

from burnish.io import atomic_open, atomic_write_bytes, fsync_dir
from burnish.record import BinGzFileRecorder, CompactRecorder, SafetensorsFileRecorder


def files(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_write_creates_and_replaces(tmp_path):
    path = tmp_path / "f.bin"
    assert atomic_write_bytes(path, b"one") == path
    atomic_write_bytes(path, b"two")
    assert path.read_bytes() == b"two" and files(tmp_path) == ["f.bin"]
    fsync_dir(tmp_path)
    fsync_dir(tmp_path / "missing")  # a no-op, not an error


def enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("target", ["write", "fsync", "replace"])
def test_failure_at_each_step_keeps_the_old_file(tmp_path, monkeypatch, target):
    path = tmp_path / "f.bin"
    path.write_bytes(b"previous")
    if target == "write":
        original = os.fdopen

        def fdopen(fd, mode):
            file = original(fd, mode)
            written = file.write

            def write(data):
                written(data[: len(data) // 2])
                enospc()

            file.write = write
            return file

        monkeypatch.setattr(os, "fdopen", fdopen)
    else:
        monkeypatch.setattr(os, target, enospc)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_bytes(path, b"new content" * 1000)
    monkeypatch.undo()
    assert path.read_bytes() == b"previous"
    assert files(tmp_path) == ["f.bin"]


def test_exception_inside_atomic_open_keeps_the_old_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"previous")
    with pytest.raises(KeyboardInterrupt), atomic_open(path) as file:
        file.write(b"half")
        raise KeyboardInterrupt
    assert path.read_bytes() == b"previous" and files(tmp_path) == ["f.bin"]


@pytest.mark.parametrize("recorder", [CompactRecorder(), BinGzFileRecorder(),
                                      SafetensorsFileRecorder()])  # fmt: skip
@pytest.mark.parametrize("target", ["fsync", "replace"])
def test_recorders_write_atomically(tmp_path, monkeypatch, recorder, target):
    path = recorder.record({"w": torch.ones(3)}, tmp_path / "m")
    before = path.read_bytes()
    monkeypatch.setattr(os, target, enospc)
    with pytest.raises(OSError, match="No space left"):
        recorder.record({"w": torch.zeros(300)}, tmp_path / "m")
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert files(tmp_path) == [path.name]
    assert torch.equal(recorder.load(path)["w"], torch.ones(3))


# -- permissions: what `open(path, "w")` would give ------------------------------------------

MODES_SCRIPT = os.path.join(os.path.dirname(__file__), "file_modes_run.py")


@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o022, 0o077], ids=["umask-022", "umask-077"])
def test_every_file_burnish_writes_has_the_mode_of_open(tmp_path, umask):
    """Checkpoints, logs, metrics.csv, mlflow-run.json, save_file, config, convert, report."""
    import json

    from tests import fork_server

    pytest.importorskip("mlflow")
    command = [MODES_SCRIPT, f"{umask:o}", str(tmp_path)]  # forked: tests/fork_server.py
    result = fork_server.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    modes = json.loads(result.stdout.strip().splitlines()[-1])
    for name in (
        "run/checkpoint/epoch-1/model.mpk",
        "run/checkpoint/epoch-1/COMMIT",
        "run/metrics.csv",
        "run/mlflow-run.json",
        "model.mpk",
        "optim.json",
        "converted.safetensors",
        "report.html",
        "run/experiment.log",
    ):
        assert name in modes, sorted(modes)
    expected = 0o666 & ~umask
    wrong = {name: oct(mode) for name, mode in modes.items() if mode != expected}
    assert wrong == {}, f"expected {oct(expected)} for every file"


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    path = tmp_path / "f.bin"
    atomic_write_bytes(path, b"one")
    umask = os.umask(0o022)
    os.umask(umask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask
    os.chmod(path, 0o640)
    atomic_write_bytes(path, b"two")
    assert os.stat(path).st_mode & 0o777 == 0o640
    assert path.read_bytes() == b"two" and files(tmp_path) == ["f.bin"]


def test_a_missing_directory_is_named_not_the_temp_file(tmp_path):
    from burnish.io import atomic_write_bytes

    target = tmp_path / "missing" / "report.html"
    with pytest.raises(
        FileNotFoundError, match=r"Cannot write .*report\.html: its directory"
    ) as info:
        atomic_write_bytes(target, b"x")
    assert ".tmp" not in str(info.value)

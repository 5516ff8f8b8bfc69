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

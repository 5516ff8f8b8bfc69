"""Faults that are not kills: corrupt or incomplete checkpoints, and a disk that fails mid-write."""

from __future__ import annotations

import errno
import logging

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train import KeepLastNCheckpoints
from burnish.train.checkpoint import CheckpointId, FileCheckpointer

from tests.train.helpers import Mlp, builder, loaders


def train(artifact_dir, epochs, configure=None):
    bn.seed(2)
    b = builder(artifact_dir, epochs, DefaultRecorder())
    if configure is not None:
        b = configure(b)
    return b.build(Mlp(), AdamConfig().init(), 1e-3).fit(*loaders(train_items=128, valid_items=64))


def flip_byte(path, offset=-20):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, caplog):
    train(tmp_path, epochs=2)
    flip_byte(next((tmp_path / "checkpoint" / "epoch-2").glob("model.*")))
    with caplog.at_level(logging.INFO, logger="burnish.train"):
        result = train(tmp_path, epochs=3, configure=lambda b: b.resume())
    assert "Skipping checkpoint epoch-2" in caplog.text and "is corrupt" in caplog.text
    assert result.epochs_completed == 3
    assert "Resumed from checkpoint epoch-1" in (tmp_path / "experiment.log").read_text()


def test_asking_for_a_corrupt_checkpoint_fails_with_a_clear_error(tmp_path):
    train(tmp_path, epochs=1)
    path = next((tmp_path / "checkpoint" / "epoch-1").glob("optim.*"))
    path.write_bytes(path.read_bytes()[:-10])  # truncated
    with pytest.raises(bn.CheckpointError, match=r"optim\..* is corrupt: sha256"):
        train(tmp_path, epochs=2, configure=lambda b: b.checkpoint(1))


def test_every_checkpoint_corrupt_is_an_error_not_a_restart(tmp_path):
    train(tmp_path, epochs=1)
    (tmp_path / "checkpoint" / "epoch-1" / "COMMIT").write_text("{")
    with pytest.raises(bn.CheckpointError, match="Every checkpoint is damaged"):
        train(tmp_path, epochs=2, configure=lambda b: b.checkpoint("latest"))


def test_incomplete_checkpoint_directories_are_removed_and_never_loaded(tmp_path):
    train(tmp_path, epochs=1)
    half = tmp_path / "checkpoint" / ".tmp-epoch-2-12345"
    half.mkdir()
    (half / "model.mpk").write_bytes(b"partial")
    uncommitted = tmp_path / "checkpoint" / "epoch-9"
    uncommitted.mkdir()
    result = train(tmp_path, epochs=2, configure=lambda b: b.resume())
    assert result.epochs_completed == 2
    assert not half.exists() and not uncommitted.exists()


@pytest.mark.parametrize(
    ("code", "message"),
    [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")],
)
@pytest.mark.parametrize("keep_last_one", [False, True])
def test_disk_failing_during_a_checkpoint_surfaces_and_keeps_the_previous_one(
    tmp_path, monkeypatch, code, message, keep_last_one
):
    def configure(b):
        b = b.checkpoint(1)
        return b.with_checkpointing_strategy(KeepLastNCheckpoints(1)) if keep_last_one else b

    train(tmp_path, epochs=1)
    before = {p.name: p.read_bytes() for p in (tmp_path / "checkpoint" / "epoch-1").iterdir()}
    recorder_type = type(DefaultRecorder())
    original = recorder_type.record

    def failing_disk(self, record, path):
        if "optim" in str(path):
            raise OSError(code, message, str(path))
        return original(self, record, path)

    monkeypatch.setattr(recorder_type, "record", failing_disk)
    with pytest.raises(OSError, match=message):
        train(tmp_path, epochs=2, configure=configure)
    monkeypatch.undo()
    checkpointer = FileCheckpointer(tmp_path / "checkpoint", DefaultRecorder())
    assert checkpointer.committed() == [CheckpointId(1)]
    checkpointer.verify(CheckpointId(1))
    after = {p.name: p.read_bytes() for p in (tmp_path / "checkpoint" / "epoch-1").iterdir()}
    assert after == before
    assert [p.name for p in (tmp_path / "checkpoint").iterdir()] == ["epoch-1"]
    records = checkpointer.load(CheckpointId(1))
    assert isinstance(records["model"]["linear1.weight"], torch.Tensor)

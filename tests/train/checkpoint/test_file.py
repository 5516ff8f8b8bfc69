"""FileCheckpointer: committed directories, checksums, cleaning and deletion on a real disk."""

from __future__ import annotations

import json

import pytest
import torch

from burnish.errors import CheckpointError
from burnish.record import DefaultRecorder
from burnish.train.checkpoint import CheckpointId, FileCheckpointer


def records(value: float = 1.0):
    return {"model": {"weight": torch.full((3,), value)}, "learner": {"epoch": 1}}


@pytest.fixture
def checkpointer(tmp_path):
    return FileCheckpointer(tmp_path / "checkpoint", DefaultRecorder())


def test_saved_checkpoints_load_back_and_list_in_training_order(checkpointer):
    for point in (CheckpointId(2), CheckpointId(1, 5), CheckpointId(1), CheckpointId(2, 1)):
        checkpointer.save(point, records(point.epoch))
    assert [p.name for p in checkpointer.committed()] == [
        "epoch-1-iteration-5",
        "epoch-1",
        "epoch-2-iteration-1",
        "epoch-2",
    ]
    loaded = checkpointer.load(CheckpointId(2))
    assert torch.equal(loaded["model"]["weight"], torch.full((3,), 2.0))
    assert loaded["learner"] == {"epoch": 1}


def test_commit_lists_the_sha256_of_every_file(checkpointer):
    path = checkpointer.save(CheckpointId(1), records())
    marker = json.loads((path / "COMMIT").read_text())
    assert marker["checkpoint"] == "epoch-1"
    assert sorted(marker["files"]) == sorted(p.name for p in path.iterdir() if p.name != "COMMIT")
    assert all(len(digest) == 64 for digest in marker["files"].values())


def test_a_corrupt_file_is_refused(checkpointer):
    path = checkpointer.save(CheckpointId(1), records())
    model = next(path.glob("model.*"))
    data = bytearray(model.read_bytes())
    data[-1] ^= 0xFF
    model.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="is corrupt: sha256"):
        checkpointer.load(CheckpointId(1))
    with pytest.raises(CheckpointError, match="does not exist"):
        checkpointer.load(CheckpointId(7))


def test_uncommitted_directories_are_never_listed_and_are_cleaned(checkpointer):
    checkpointer.save(CheckpointId(1), records())
    directory = checkpointer.directory
    (directory / "epoch-2").mkdir()  # a crash before COMMIT was written
    (directory / ".tmp-epoch-3-123").mkdir()
    (directory / ".trash-epoch-0-123").mkdir()
    assert checkpointer.committed() == [CheckpointId(1)]
    with pytest.raises(CheckpointError, match="never committed"):
        checkpointer.load(CheckpointId(2))
    removed = checkpointer.clean_incomplete()
    assert sorted(removed) == [".tmp-epoch-3-123", ".trash-epoch-0-123", "epoch-2"]
    assert sorted(p.name for p in directory.iterdir()) == ["epoch-1"]


def test_resaving_a_point_replaces_it_and_delete_removes_it(checkpointer):
    checkpointer.save(CheckpointId(1), records(1.0))
    checkpointer.save(CheckpointId(1), records(5.0))
    loaded = checkpointer.load(CheckpointId(1))
    assert torch.equal(loaded["model"]["weight"], torch.full((3,), 5.0))
    checkpointer.delete(CheckpointId(1))
    checkpointer.delete(CheckpointId(9))  # absent: nothing to do
    assert checkpointer.committed() == []
    assert list(checkpointer.directory.iterdir()) == []


def test_checkpoint_names_round_trip():
    for point in (CheckpointId(3), CheckpointId(3, 40)):
        assert CheckpointId.parse(point.name) == point
    assert CheckpointId.parse("epoch-x") is None
    assert (
        CheckpointId(2, 9).sort_key() < CheckpointId(2).sort_key() < CheckpointId(3, 1).sort_key()
    )

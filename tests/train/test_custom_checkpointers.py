"""Burn main's `Checkpointer` trait (crates/burn-train/src/checkpoint/base.rs): checkpointers a
user writes, plugged in with `with_custom_checkpointers(model, optim, scheduler)`, called by a
real fit on MNIST with the epochs Burn's `LearningCheckpointer` calls them with, and restored
from by `checkpoint(epoch)`."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import torch

import burnish as bn
from burnish.errors import CheckpointError
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.record.store.module_record import ModuleRecord
from burnish.train import Learner, SupervisedTraining
from burnish.train.checkpoint import (
    Checkpointer,
    FileCheckpointer,
    KeepLastNCheckpoints,
)
from burnish.train.metric import AccuracyMetric, LossMetric

from tests.train.helpers import Mlp, loaders

SMALL = {"train_items": 128, "valid_items": 64, "batch_size": 32}


class InMemoryCheckpointer:
    """`impl<R: Checkpoint> Checkpointer<R> for InMemoryCheckpointer`: a `Mutex<HashMap>`."""

    def __init__(self) -> None:
        self.records: dict[int, object] = {}
        self.lock = threading.Lock()
        self.calls: list[tuple[str, int]] = []

    def save(self, epoch, record):
        with self.lock:
            self.calls.append(("save", epoch))
            self.records[epoch] = record

    def delete(self, epoch):
        with self.lock:
            self.calls.append(("delete", epoch))
            self.records.pop(epoch, None)

    def restore(self, epoch):
        with self.lock:
            self.calls.append(("restore", epoch))
            return self.records[epoch]


class DirectoryCheckpointer:
    """Burn's `FileCheckpointer::new(directory, name)`: `<name>-<epoch>.<ext>` files, written
    with a recorder; restore takes the device, as Burn 0.21's trait."""

    def __init__(self, directory, name) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.name = name
        self.recorder = DefaultRecorder()

    def path_for_epoch(self, epoch):
        return self.directory / f"{self.name}-{epoch}"

    def save(self, epoch, record):
        self.recorder.record(dict(record), self.path_for_epoch(epoch))

    def restore(self, epoch, device):
        return self.recorder.load(self.path_for_epoch(epoch), device)

    def delete(self, epoch):
        for path in self.directory.glob(f"{self.name}-{epoch}.*"):
            path.unlink()


def training(artifact_dir, checkpointers, num_epochs=3):
    dataloader_train, dataloader_valid = loaders(**SMALL)
    return (
        SupervisedTraining(artifact_dir, dataloader_train, dataloader_valid)
        .metrics(AccuracyMetric(), LossMetric())
        .with_custom_checkpointers(*checkpointers)
        .with_checkpointing_strategy(KeepLastNCheckpoints(2))
        .num_epochs(num_epochs)
    )


def learner(seed=0):
    bn.seed(seed)
    return Learner(Mlp(), AdamConfig().init(), 1e-3)


def test_a_users_checkpointers_get_burns_calls_and_a_resume_restores_through_them(tmp_path):
    checkpointers = (InMemoryCheckpointer(), InMemoryCheckpointer(), InMemoryCheckpointer())
    full = training(tmp_path / "full", checkpointers).launch(learner())

    for checkpointer in checkpointers:  # KeepLastNCheckpoints::new(2): save each epoch, drop 1
        assert checkpointer.calls == [("save", 1), ("save", 2), ("save", 3), ("delete", 1)]
        assert sorted(checkpointer.records) == [2, 3]
    assert isinstance(checkpointers[0].records[3], ModuleRecord)  # Burn: model.into_record()
    epoch_3 = tmp_path / "full" / "checkpoint" / "epoch-3"
    assert (epoch_3 / "COMMIT").is_file() and not list(epoch_3.glob("model.*"))

    resumed = training(tmp_path / "full", checkpointers).checkpoint(2).launch(learner(seed=7))

    for checkpointer in checkpointers:
        assert checkpointer.calls[4] == ("restore", 2)
    assert resumed.epochs_completed == 3
    expected = full.model.state_dict()
    for name, tensor in resumed.model.state_dict().items():
        torch.testing.assert_close(tensor, expected[name])


def test_a_directory_checkpointer_written_to_burns_trait_keeps_the_strategys_epochs(tmp_path):
    directory = tmp_path / "mine"
    checkpointers = [DirectoryCheckpointer(directory, n) for n in ("model", "optim", "scheduler")]
    full = training(tmp_path / "run", checkpointers).launch(learner())
    names = sorted(path.name for path in directory.iterdir())
    assert names == [f"{n}-{e}.mpk" for n in ("model", "optim", "scheduler") for e in (2, 3)]

    again = training(tmp_path / "run", checkpointers).checkpoint(2).launch(learner(seed=7))
    for name, tensor in again.model.state_dict().items():
        torch.testing.assert_close(tensor, full.model.state_dict()[name])


def test_a_restore_that_fails_names_the_part_and_the_fix(tmp_path):
    checkpointers = (InMemoryCheckpointer(), InMemoryCheckpointer(), InMemoryCheckpointer())
    training(tmp_path, checkpointers, num_epochs=1).launch(learner())
    checkpointers[1].records.clear()
    with pytest.raises(CheckpointError, match=r"`optim` checkpointer .* cannot restore epoch 1"):
        training(tmp_path, checkpointers, num_epochs=2).checkpoint(1).launch(learner())


def test_with_custom_checkpointers_refuses_what_is_neither_checkpointer_nor_recorder(tmp_path):
    mine = InMemoryCheckpointer()
    with pytest.raises(TypeError, match=r"`optim` checkpointer needs Burn's Checkpointer"):
        training(tmp_path, (mine, object(), mine))


def test_the_file_checkpointer_has_burns_checkpointer_methods(tmp_path):
    checkpointer = FileCheckpointer(tmp_path, DefaultRecorder())
    assert isinstance(checkpointer, Checkpointer)
    record = {"model": {"weight": torch.arange(3.0)}, "learner": {"epoch": 1}}
    checkpointer.save(1, record)
    restored = checkpointer.restore(1)
    torch.testing.assert_close(restored["model"]["weight"], torch.arange(3.0))
    assert restored["learner"] == {"epoch": 1}
    checkpointer.delete(1)
    with pytest.raises(CheckpointError, match=r"epoch-1' does not exist"):
        checkpointer.restore(1)
    with pytest.raises(TypeError, match=r"epoch number or a CheckpointId\. Received: str"):
        checkpointer.delete("1")

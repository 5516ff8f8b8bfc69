"""Checkpoints are written in the background: what the training loop may and may not see.

Every test here holds each background write until the loop waits for it (`HeldWrites`): the
slowest disk there is. The loop then runs on while the write is pending, which is when a
checkpoint that shared memory with the run, a `fit` that returned early or an error that got
lost would show.
"""

from __future__ import annotations

import errno
import os
import threading

import pytest
import torch

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train.checkpoint import CheckpointId, FileCheckpointer
from burnish.train.checkpoint.learning import LearningCheckpointer

from tests.helpers import iteration_lines
from tests.train.helpers import HeldWrites, Mlp, builder, loaders


@pytest.fixture
def held(monkeypatch):
    return HeldWrites(monkeypatch.setattr)


def checkpointer(tmp_path) -> FileCheckpointer:
    return FileCheckpointer(tmp_path / "checkpoint", DefaultRecorder())


def writer_threads_alive() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("burnish-checkpoint")]


def fit(tmp_path, configure=lambda b: b, model=None, epochs=2):
    bn.seed(5)
    b = builder(tmp_path, epochs, DefaultRecorder()).checkpoint_every(2)
    learner = configure(b).build(model or Mlp(dropout=0.1), AdamConfig().init(), 1e-3)
    return learner.fit(*loaders(batch_size=32, train_items=192, valid_items=64))


def test_save_returns_before_the_checkpoint_is_committed(tmp_path, held, monkeypatch):
    """The loop does not wait for the disk: each save returns with its checkpoint pending."""
    pending = []
    save_iteration = LearningCheckpointer.save_iteration

    def recording(self, state):
        save_iteration(self, state)
        point = CheckpointId(state.position.epoch, state.position.iteration)
        pending.append(point not in checkpointer(tmp_path).committed())

    monkeypatch.setattr(LearningCheckpointer, "save_iteration", recording)
    fit(tmp_path)
    assert pending == [True] * 6  # iterations 2, 4, 6 of 2 epochs
    assert held.writer_threads and threading.main_thread().name not in held.writer_threads


def test_in_place_updates_after_save_never_reach_the_checkpoint(tmp_path, held, monkeypatch):
    """Parameters and optimizer moments change in place right after each save (and the loop's
    steps go on changing them while the write is held); every committed checkpoint still
    holds the values of the moment it was asked for."""
    expected: dict[CheckpointId, dict] = {}
    loaded: dict[CheckpointId, dict] = {}
    save_iteration, save = LearningCheckpointer.save_iteration, FileCheckpointer.save

    def mutating(self, state):
        save_iteration(self, state)  # returns with the write held
        point = CheckpointId(state.position.epoch, state.position.iteration)
        model = {k: v.clone() for k, v in state.model.state_dict().items()}
        expected[point] = {"model": model, "optim": state.optim.to_record()}
        with torch.no_grad():
            for parameter in state.model.parameters():
                parameter.add_(0.01)
            for moments in state.optim._states.values():
                for key, value in moments.items():
                    if key != "step" and isinstance(value, torch.Tensor):
                        value.mul_(2.0)

    def reading_back(self, point, records):  # on the writing thread, right after the commit
        path = save(self, point, records)
        loaded[point] = self.load(point)
        return path

    monkeypatch.setattr(LearningCheckpointer, "save_iteration", mutating)
    monkeypatch.setattr(FileCheckpointer, "save", reading_back)
    fit(tmp_path)
    assert sorted(expected) == sorted(p for p in loaded if p.iteration is not None)
    for point, values in expected.items():
        for name, tensor in values["model"].items():
            assert torch.equal(loaded[point]["model"][name], tensor), (point, name)
        state = values["optim"]["state"]
        for name, moments in state.items():
            for key, value in moments.items():
                written = loaded[point]["optim"]["state"][name][key]
                assert torch.equal(torch.as_tensor(written), torch.as_tensor(value)), (point, key)


class StopAt(Mlp):
    """Asks the run's interrupter to stop, or raises, at its `at`-th train step."""

    def __init__(self, at: int, interrupter=None) -> None:
        super().__init__()
        self.at, self.steps, self.interrupter = at, 0, interrupter

    def train_step(self, batch):
        self.steps += 1
        if self.steps == self.at:
            if self.interrupter is None:
                raise RuntimeError("the loop fails at step 5")
            self.interrupter.stop("stop at step 5")
        return super().train_step(batch)


@pytest.mark.parametrize("ending", ["completed", "interrupted", "raised"])
def test_fit_returns_only_once_every_write_is_committed(tmp_path, held, ending):
    if ending == "raised":
        with pytest.raises(RuntimeError, match="the loop fails at step 5"):
            fit(tmp_path, model=StopAt(at=5))
        newest = CheckpointId(1, 4)
    elif ending == "interrupted":
        model = StopAt(at=5)

        def configure(b):
            model.interrupter = b.interrupter()
            return b

        assert fit(tmp_path, configure, model=model).interrupted
        newest = CheckpointId(1, 5)  # the interruption's own checkpoint
    else:
        assert fit(tmp_path).epochs_completed == 2
        newest = CheckpointId(2)
    assert checkpointer(tmp_path).committed()[-1] == newest
    assert writer_threads_alive() == []
    leftovers = [p.name for p in (tmp_path / "checkpoint").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def failing_write_of(monkeypatch, name: str) -> None:
    """The disk fails while writing checkpoint `name`'s optimizer file."""
    recorder_type = type(DefaultRecorder())
    record = recorder_type.record

    def failing(self, value, path, **kwargs):
        if path.parent.name == f".tmp-{name}-{os.getpid()}" and path.name == "optim":
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return record(self, value, path, **kwargs)

    monkeypatch.setattr(recorder_type, "record", failing)


def test_a_failed_write_is_raised_at_the_next_save(tmp_path, held, monkeypatch):
    failing_write_of(monkeypatch, "epoch-1-iteration-2")
    with pytest.raises(OSError, match="No space left on device") as raised:
        fit(tmp_path)
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "checkpoint epoch-1-iteration-2 in the background" in notes
    # The loop went on to its next save (iteration 4), which raised the error: no further.
    lines = iteration_lines(tmp_path / "train" / "epoch-1" / "Loss.log")
    assert len(lines) == 4
    assert checkpointer(tmp_path).committed() == []  # nothing half-written either
    assert [p.name for p in (tmp_path / "checkpoint").iterdir()] == []
    assert writer_threads_alive() == []


def test_a_failed_last_write_is_raised_when_fit_ends(tmp_path, held, monkeypatch):
    failing_write_of(monkeypatch, "epoch-2")
    with pytest.raises(OSError, match="No space left on device") as raised:
        fit(tmp_path)
    assert "checkpoint epoch-2 in the background" in "\n".join(raised.value.__notes__)
    assert checkpointer(tmp_path).committed()[-1] == CheckpointId(2, 6)  # deletions not made


def test_a_failed_write_is_noted_on_the_loops_own_error(tmp_path, held, monkeypatch, caplog):
    failing_write_of(monkeypatch, "epoch-1-iteration-4")
    with pytest.raises(RuntimeError, match="the loop fails at step 5") as raised:
        fit(tmp_path, model=StopAt(at=5))
    notes = "\n".join(raised.value.__notes__)
    assert "Writing a checkpoint failed too: OSError" in notes
    assert "No space left on device" in notes
    assert "Writing a checkpoint failed" in caplog.text
    assert checkpointer(tmp_path).committed() == [CheckpointId(1, 2)]

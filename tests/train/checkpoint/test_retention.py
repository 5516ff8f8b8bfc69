"""Retention: the epoch checkpoints a run keeps, and what a resume deletes after a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from burnish.errors import RecordError
from burnish.record import DefaultRecorder
from burnish.train.checkpoint import CheckpointId, CheckpointingAction, FileCheckpointer
from burnish.train.checkpoint.retention import Retention
from burnish.train.checkpoint.run_end import Resumed, RunEnd

SAVE, DELETE = CheckpointingAction.SAVE, CheckpointingAction.DELETE


def test_plan_follows_the_actions():
    retention = Retention()
    assert retention.plan(1, [SAVE], None) == (True, [])
    assert retention.plan(2, [SAVE], None) == (True, [])
    assert retention.plan(3, [SAVE, DELETE(1)], None) == (True, [1])
    assert retention.plan(4, [], None) == (False, [])
    assert retention.kept == {2, 3}


def test_the_last_epoch_is_saved_to_record_the_end_and_dropped_if_the_run_goes_on():
    retention = Retention()
    retention.plan(1, [SAVE], None)
    # The strategy keeps only epoch 1, but the run ends at 2: saved anyway.
    assert retention.plan(2, [], RunEnd(2)) == (True, [])
    assert retention.to_record() == {"kept": [1, 2], "end_only": 2}
    resumed = Retention()  # resumed with more epochs: epoch 2 goes once epoch 3 is decided
    resumed.load_record(json.loads(json.dumps(retention.to_record())))
    assert resumed.plan(3, [], None) == (False, [2])
    assert resumed.kept == {1} and resumed.end_only is None
    # A strategy that saves the last epoch itself needs no extra checkpoint.
    assert resumed.plan(4, [SAVE, DELETE(1)], RunEnd(4, stopped_early=True)) == (True, [1])
    assert resumed.end_only is None


def test_stale_lists_what_the_resumed_checkpoint_no_longer_keeps(tmp_path):
    checkpointer = FileCheckpointer(tmp_path, DefaultRecorder())
    for point in [CheckpointId(1), CheckpointId(2), CheckpointId(3, 2), CheckpointId(3)]:
        checkpointer.save(point, {"learner": {"epoch": point.epoch}})
    checkpointer.save(CheckpointId(4, 2), {"learner": {}})  # newer than the resume point
    retention = Retention()
    retention.load_record({"kept": [2, 3], "end_only": None})
    assert retention.stale(checkpointer, CheckpointId(3)) == [CheckpointId(1), CheckpointId(3, 2)]
    assert retention.stale(checkpointer, CheckpointId(2)) == [CheckpointId(1)]
    # A checkpoint from before retention was recorded: what is on disk counts as kept.
    retention.load_record(None, present=[1, 2, 3])
    assert retention.stale(checkpointer, CheckpointId(3)) == [CheckpointId(3, 2)]


def test_bad_records():
    with pytest.raises(RecordError, match="retention record must be a dict with `kept`"):
        Retention().load_record({"kept": [1]})
    with pytest.raises(RecordError, match="run-end record must be None or a dict"):
        RunEnd.from_record({"epoch": 3})
    assert RunEnd.from_record(None) is None
    assert RunEnd.from_record(RunEnd(3, True).to_record()) == RunEnd(3, True)


def test_run_end_and_resumed():
    assert RunEnd.after(2, 5, stopped_early=False) is None
    assert RunEnd.after(5, 5, stopped_early=False) == RunEnd(5)
    assert RunEnd.after(2, 5, stopped_early=True) == RunEnd(2, True)
    tmp = Path("checkpoint/epoch-3")
    done = Resumed(tmp, 3, RunEnd(3))
    assert done.is_over(3) and not done.is_over(4)  # more epochs: a completed run goes on
    stopped = Resumed(tmp, 3, RunEnd(3, stopped_early=True))
    assert stopped.is_over(8) and stopped.stopped_early
    assert Resumed(tmp, 1).describe().startswith("Training is already complete: 1 epoch,")

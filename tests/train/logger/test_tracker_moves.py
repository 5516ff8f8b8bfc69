"""An artifact directory moved or copied between a crash and its resume keeps its MLflow run:
the default store lies inside it and the run record names it relative to it."""

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest

from burnish.train.logger.tracker import ResumePosition

from tests import fork_server
from tests.train.logger import tracker_schedule as schedule
from tests.train.logger.test_trackers import (
    CRASH_SCRIPT,
    assert_mlflow_points,
    mlflow_run,
    with_mlflow_store,
)
from tests.train.logger.tracker_schedule import TRAIN_ITERATIONS, make_loggers, play, step_of

pytest.importorskip("mlflow")


def crash(artifact_dir):
    """Epochs 1-3 and half of 4 logged, a checkpoint after epoch 2, SIGKILL."""
    crashed = fork_server.run(
        [str(CRASH_SCRIPT), str(artifact_dir), "mlflow"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        cwd=artifact_dir,
        timeout=240,
    )
    assert crashed.returncode == -9, crashed.stderr[-3000:]


def resume(artifact_dir, warnings):
    [logger] = make_loggers(artifact_dir, ["mlflow"])
    position = ResumePosition(3, 0, step_of(2, TRAIN_ITERATIONS))
    run = schedule.run_info(artifact_dir, position)
    logger.start(dataclasses.replace(run, warn=warnings.append))
    play([logger], 3, 5)
    model = artifact_dir / "model.mpk"
    model.write_bytes(b"weights")
    logger.finish("summary", model)
    logger.close()


@pytest.mark.parametrize("how", ["move", "copy"])
def test_mlflow_run_survives_a_moved_artifact_directory(tmp_path, mlflow_db, how):
    before, after = tmp_path / "before", tmp_path / "elsewhere" / "after"
    with_mlflow_store(before, mlflow_db)
    crash(before)
    run_id = json.loads((before / "mlflow-run.json").read_text())["run_id"]
    after.parent.mkdir()
    if how == "move":
        before.rename(after)
    else:
        shutil.copytree(before, after)

    warnings = []
    resume(after, warnings)
    assert warnings == []
    client, run, history = mlflow_run(after)
    assert run.info.run_id == run_id and run.info.status == "FINISHED"
    assert len(client.search_runs([run.info.experiment_id])) == 1
    assert_mlflow_points(history, 5)  # every step once, the epochs past the checkpoint too
    # The artifacts went into the directory's new place; the old one is left as it was.
    assert run.info.artifact_uri.startswith((after / "mlflow-artifacts").resolve().as_uri())
    local = client.download_artifacts(run_id, "model/model.mpk", str(tmp_path))
    assert Path(local).read_bytes() == b"weights"
    assert (after / "mlflow-artifacts").is_dir()
    if how == "move":
        assert not before.exists()
    else:
        assert not (before / "mlflow-artifacts" / "0").exists()
        assert not any((before / "mlflow-artifacts").rglob("model.mpk"))


def test_a_new_mlflow_run_is_said_on_the_console(tmp_path, mlflow_db):
    """Where the run cannot be continued (the recorded one is gone), the user is told."""
    with_mlflow_store(tmp_path, mlflow_db)
    [logger] = make_loggers(tmp_path, ["mlflow"])
    logger.start(schedule.run_info(tmp_path))
    play([logger], 1, 2)
    logger.close()
    record = json.loads((tmp_path / "mlflow-run.json").read_text())
    record["run_id"] = "0" * 32
    (tmp_path / "mlflow-run.json").write_text(json.dumps(record))
    warnings = []
    resume(tmp_path, warnings)
    assert len(warnings) == 1 and "starting a new MLflow run" in warnings[0], warnings
    assert "0" * 32 in warnings[0]

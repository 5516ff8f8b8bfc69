"""A checkpoint covers the trackers' points: a SIGKILL right after a checkpoint's flush loses
none of them (W&B offline: its service writes the `.wandb` file on its own schedule, so
`WandbLogger.flush` waits for the rows), and the resumed run stores each point once."""

import json
import os

import pytest

from burnish.train.logger.tracker import ResumePosition

from tests import fork_server
from tests.train.logger import tracker_schedule as schedule
from tests.train.logger.test_trackers import (
    CRASH_SCRIPT,
    assert_wandb_points,
    wandb_rows,
)
from tests.train.logger.tracker_schedule import TRAIN_ITERATIONS, make_loggers, play, step_of

pytest.importorskip("wandb")


def crash_at_checkpoint(artifact_dir, names, epoch):
    env = {**os.environ, **schedule.wandb_env(artifact_dir / "wandb-home")}
    env.pop("WANDB_SERVICE", None)  # its own W&B service, dying with it, as in a real crash
    crashed = fork_server.run(
        [str(CRASH_SCRIPT), str(artifact_dir), ",".join(names), f"at-checkpoint:{epoch}"],
        capture_output=True,
        text=True,
        env=env,
        cwd=artifact_dir,
        timeout=240,
    )
    assert crashed.returncode == -9, crashed.stderr[-3000:]


@pytest.mark.parametrize("epoch", [1, 2])
def test_wandb_sigkill_right_after_a_checkpoint_keeps_its_points(tmp_path, wandb_home, epoch):
    crash_at_checkpoint(tmp_path, ["wandb"], epoch)
    # The killed session's file holds every point up to the checkpoint, each once.
    run_id, paths, rows = wandb_rows(tmp_path)
    assert len(paths) == 1
    assert_wandb_points(rows, epoch)

    [logger] = make_loggers(tmp_path, ["wandb"])
    resume = ResumePosition(epoch + 1, 0, step_of(epoch, TRAIN_ITERATIONS))
    logger.start(schedule.run_info(tmp_path, resume))
    play([logger], epoch + 1, 3)
    logger.finish("summary")
    logger.close()
    again, paths, rows = wandb_rows(tmp_path)
    assert again == run_id and len(paths) == 2
    assert_wandb_points(rows, 3)
    assert json.loads((tmp_path / "wandb-run.json").read_text())["id"] == run_id

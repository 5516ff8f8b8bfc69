"""After a branch (`checkpoint(N)` from a run that went further, with another lr), every
tracker shows the final line's history as the file logs do: MLflow and W&B in a new run linked
to the one it leaves, holding the points up to the branch and the branch's after it."""

import dataclasses
import json

import pytest

from burnish.train.logger.tracker import ResumePosition

from tests.train.logger import tracker_schedule as schedule
from tests.train.logger.test_trackers import mlflow_run, read_csv, wandb_rows, with_mlflow_store
from tests.train.logger.tracker_schedule import TRAIN_ITERATIONS, make_loggers, play, step_of

pytest.importorskip("mlflow")
pytest.importorskip("wandb")

BRANCH = "line 1 from epoch-2"
SHIFT = 1000.0  # the branch's values: the straight run's shifted, so no point can pass for one


class Branched:
    """A logger as the branch drives it: its values differ from the abandoned line's."""

    def __init__(self, logger):
        self.logger = logger

    def log_iteration(self, split, epoch, iteration, step, values, lr=None):
        shifted = {name: value + SHIFT for name, value in values.items()}
        self.logger.log_iteration(split, epoch, iteration, step, shifted, lr)

    def log_epoch(self, split, epoch, values, lr=None):
        shifted = {name: value + SHIFT for name, value in values.items()}
        self.logger.log_epoch(split, epoch, shifted, lr)


def wandb_history(rows: list[dict]) -> tuple[dict, dict]:
    """W&B rows as (epoch points, iteration points), each asserted to be there once."""
    epochs: dict = {}
    steps: dict = {}
    for row in rows:
        for key, value in row.items():
            group, _, name = key.partition("/")
            if group in ("train", "valid"):
                assert (group, name, row["epoch"]) not in epochs
                epochs[(group, name, row["epoch"])] = value
            elif group == "iteration":
                name = key.removeprefix("iteration/train/")
                assert (name, row["global_step"]) not in steps
                steps[(name, row["global_step"])] = value
    return epochs, steps


def file_history(artifact_dir):
    """The history the CSV table (a file log) shows: epoch points and training steps."""
    epochs, steps = {}, {}
    for epoch, iteration, split, metric, value in read_csv(artifact_dir / "metrics.csv"):
        if iteration == "":
            epochs[(split, metric, int(epoch))] = float(value)
        elif split == "train":
            steps[(metric, schedule.step_of(int(epoch), int(iteration)))] = float(value)
    return epochs, steps


def test_a_branch_shows_the_final_line_in_every_tracker(tmp_path, wandb_home, mlflow_db):
    with_mlflow_store(tmp_path, mlflow_db)
    names = ["csv", "mlflow", "wandb"]
    loggers = make_loggers(tmp_path, names)
    for logger in loggers:
        logger.start(schedule.run_info(tmp_path))
    play(loggers, 1, 4)  # the line the branch leaves: 4 epochs
    for logger in loggers:
        logger.finish("summary")
        logger.close()
    parent_mlflow = json.loads((tmp_path / "mlflow-run.json").read_text())["run_id"]
    parent_wandb = json.loads((tmp_path / "wandb-run.json").read_text())["id"]

    said, warned = [], []
    resume = ResumePosition(3, 0, step_of(2, TRAIN_ITERATIONS))
    info = dataclasses.replace(
        schedule.run_info(tmp_path, resume),
        config={**schedule.CONFIG, "lr": 0.02},
        branch=BRANCH,
        warn=warned.append,
        say=said.append,
    )
    loggers = make_loggers(tmp_path, names)
    for logger in loggers:
        logger.start(info)
    play([Branched(logger) for logger in loggers], 3, 4)
    for logger in loggers:
        logger.finish("summary")
        logger.close()

    epochs, steps = file_history(tmp_path)
    assert epochs[("valid", "Loss", 2)] < SHIFT < epochs[("valid", "Loss", 3)]  # the branch
    assert len(steps) == 4 * TRAIN_ITERATIONS * 3  # Loss, Accuracy, lr at steps 1..16

    # MLflow: a child run of the one left, with the branch's params and exactly that history.
    client, run, history = mlflow_run(tmp_path)
    assert run.info.run_id != parent_mlflow
    assert run.data.tags["mlflow.parentRunId"] == parent_mlflow
    assert run.data.params["lr"] == "0.02"
    got_epochs = {
        (key.partition("/")[0], key.partition("/")[2], step): value
        for key, points in history.items()
        if not key.startswith("iteration/")
        for step, value in points
    }
    got_steps = {
        (key.removeprefix("iteration/train/"), step): value
        for key, points in history.items()
        if key.startswith("iteration/")
        for step, value in points
    }
    assert sum(len(points) for points in history.values()) == len(got_epochs) + len(got_steps)
    assert got_epochs == epochs and got_steps == steps
    assert client.get_run(parent_mlflow).data.params["lr"] == "0.01"  # the parent as it was

    # W&B: a new run whose offline files hold each point of the final line once.
    run_id, _, rows = wandb_rows(tmp_path)
    assert run_id != parent_wandb
    assert wandb_history(rows) == (epochs, steps)
    assert len(said) == 2 and all(BRANCH in line for line in said), said
    assert warned == []  # a branch's new run is expected behaviour, not a warning


def wandb_config(artifact_dir):
    """The config the run of `wandb-run.json` was started with, from its offline `.wandb` file."""
    from wandb.proto import wandb_internal_pb2

    from burnish.train.logger.wandb_file import _records

    _, paths, _ = wandb_rows(artifact_dir)
    config = {}
    for data in _records(paths[0]):
        record = wandb_internal_pb2.Record()  # type: ignore[attr-defined]  # generated
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        items = record.run.config.update if kind == "run" else ()
        items = record.config.update if kind == "config" else items
        for item in items:
            config[item.key] = json.loads(item.value_json)
    return config


def test_a_branch_of_a_branch_links_to_the_line_it_leaves(tmp_path, wandb_home, mlflow_db):
    """Line 1 branches at epoch-3 of line 0; line 2 branches at epoch-2, a checkpoint line 0
    wrote and line 1 shares: its parent is line 1, the line the run leaves, in `lineage.json`
    and in the trackers (MLflow `mlflow.parentRunId`, W&B `burnish.parent_run`)."""
    from tests.train.test_lineage import fit

    with_mlflow_store(tmp_path, mlflow_db)

    def trained(epochs, lr, start):
        fit(tmp_path, epochs, lr, start, trackers=make_loggers(tmp_path, ["mlflow", "wandb"]))
        mlflow_id = json.loads((tmp_path / "mlflow-run.json").read_text())["run_id"]
        return mlflow_id, json.loads((tmp_path / "wandb-run.json").read_text())["id"]

    line_0 = trained(4, 1e-3, None)
    line_1 = trained(4, 3e-3, 3)
    line_2 = trained(3, 2e-3, 2)
    assert len({line_0, line_1, line_2}) == 3
    lineage = json.loads((tmp_path / "branches" / "lineage.json").read_text())
    assert lineage["current"] == 2
    assert [(line["parent"], line["from"]) for line in lineage["lines"]] == [
        (0, "epoch-3"),
        (1, "epoch-2"),
    ]
    client, run, _ = mlflow_run(tmp_path)
    assert run.data.tags["mlflow.parentRunId"] == line_1[0]
    assert client.get_run(line_1[0]).data.tags["mlflow.parentRunId"] == line_0[0]
    assert run.data.tags["burnish.branch"] == "line 2 from epoch-2"
    config = wandb_config(tmp_path)
    assert config["burnish.parent_run"] == line_1[1]
    assert config["burnish.branch"] == "line 2 from epoch-2"

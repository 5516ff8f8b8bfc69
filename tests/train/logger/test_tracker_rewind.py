"""A resume after a stop rewinds every tracker (issue 40's trial, docs/trackers.md): a run with
CSV, MLflow (SQLite) and W&B (offline) stops for a NaN loss (`on_non_finite("stop")`) after it
logged points past its last checkpoint; resumed with the cause fixed (no NaN, a lower lr: other
values from the checkpoint on), every tracker holds exactly the CSV's history. MLflow deletes
the points past the resume point from its SQLite store and continues the same run; W&B, which
cannot rewrite a row, starts a new run linked to the stopped one (`"stopped": true` in
`wandb-run.json`) with the rows up to the checkpoint copied."""

from __future__ import annotations

import io
import json

import pytest

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders
from tests.train.logger.test_tracker_branches import file_history
from tests.train.logger.test_trackers import mlflow_run, wandb_rows, with_mlflow_store
from tests.train.logger.tracker_schedule import make_loggers
from tests.train.test_non_finite import NanAt

pytest.importorskip("mlflow")
pytest.importorskip("wandb")
pytestmark = pytest.mark.usefixtures("one_torch_thread")

NAN_AT = 7  # epoch 2, iteration 3 (4 steps an epoch): steps 5 and 6 are logged past epoch-1


def fit(artifact_dir, model, lr, resume=False):
    """Two epochs of the MLP with CSV, MLflow and W&B (every iteration), stopping at a NaN."""
    bn.seed(5)
    console = io.StringIO()
    configured = (
        builder(artifact_dir, epochs=2, recorder=DefaultRecorder())
        .renderer(CliMetricsRenderer(file=console))
        .on_non_finite("stop")
        .log_to(*make_loggers(artifact_dir, ["csv", "mlflow", "wandb"]))
        .log_every(1)
    )
    if resume:
        configured = configured.resume()
    learner = configured.build(model, AdamConfig().init(), lr)
    result = learner.fit(*loaders(batch_size=64, train_items=256, valid_items=64))
    return result, console.getvalue()


def tracker_history(points):
    """(epoch points, step points) keyed as `file_history`'s, from `key -> [(step, value)]`."""
    epochs, steps = {}, {}
    for key, values in points.items():
        for step, value in values:
            group, _, name = key.partition("/")
            if group == "iteration":
                point = (key.removeprefix("iteration/train/"), step)
                assert point not in steps, f"{point} twice"
                steps[point] = value
            else:
                assert (group, name, step) not in epochs, f"{(group, name, step)} twice"
                epochs[(group, name, step)] = value
    return epochs, steps


def test_a_resume_after_a_nan_stop_leaves_every_tracker_the_csv_history(
    tmp_path, wandb_home, mlflow_db
):
    with_mlflow_store(tmp_path, mlflow_db)
    stopped, _ = fit(tmp_path, NanAt(NAN_AT), 1e-3)
    assert stopped.stopped_non_finite
    assert sorted(p.name for p in (tmp_path / "checkpoint").iterdir()) == ["epoch-1"]
    _, before = file_history(tmp_path)
    assert ("Loss", 6) in before  # points the stopped session logged past its checkpoint
    first_mlflow = json.loads((tmp_path / "mlflow-run.json").read_text())["run_id"]
    first_wandb = json.loads((tmp_path / "wandb-run.json").read_text())
    assert first_wandb["stopped"] is True

    resumed, console = fit(tmp_path, Mlp(), 5e-4, resume=True)  # the cause fixed
    assert resumed.epochs_completed == 2 and not resumed.stopped_non_finite
    epochs, steps = file_history(tmp_path)
    assert sorted(step for name, step in steps if name == "Loss") == list(range(1, 9))
    assert steps[("Loss", 6)] != before[("Loss", 6)]  # the resumed run's values replace them
    assert steps[("Loss", 4)] == before[("Loss", 4)]  # up to the checkpoint, kept

    # MLflow: the same run, the points past the resume point rewritten in the SQLite store.
    _, run, history = mlflow_run(tmp_path)
    assert run.info.run_id == first_mlflow
    assert tracker_history(history) == (epochs, steps)
    assert run.data.metrics["iteration/train/Loss"] == steps[("Loss", 8)]  # the latest point

    # W&B: a new run linked to the stopped one, holding each point of the CSV's history once.
    run_id, paths, rows = wandb_rows(tmp_path)
    assert run_id != first_wandb["id"]
    assert len(paths) == 1
    points: dict[str, list] = {}
    for row in rows:
        for key, value in row.items():
            if key.startswith("iteration/"):
                points.setdefault(key, []).append((row["global_step"], value))
            elif key.partition("/")[0] in ("train", "valid"):
                points.setdefault(key, []).append((row["epoch"], value))
    assert tracker_history(points) == (epochs, steps)
    assert "the run continues as a new W&B run" in console
    assert "child of" not in console  # MLflow rewound: no new run

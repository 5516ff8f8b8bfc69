"""Experiment trackers, read back with each tool's own reader: TensorBoard's EventAccumulator,
MLflow's MlflowClient, the W&B offline run directory, the csv module. A SIGKILLed session
resumed from a checkpoint leaves every point in each store exactly once."""

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from burnish.train.logger.csv_logger import CSV_COLUMNS, CsvLogger
from burnish.train.logger.tracker import ResumePosition, RunInfo, flatten_config

from tests.train.logger import tracker_schedule as schedule
from tests.train.logger.tracker_schedule import (
    TRAIN_ITERATIONS,
    VALID_ITERATIONS,
    epoch_values,
    iteration_values,
    lr_of,
    make_loggers,
    play,
    play_train,
    play_valid,
    run_info,
    step_of,
)

REPO = Path(__file__).resolve().parents[3]
CRASH_SCRIPT = Path(__file__).with_name("tracker_crash_run.py")
OPTIONAL = ("tensorboard", "mlflow", "wandb", "torchmetrics")


def with_mlflow_store(artifact_dir, template):
    """Put a copy of the empty store where MlflowLogger's default store goes."""
    artifact_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, artifact_dir / "mlflow.db")


# ------------------------------------------------------------------ readers
def read_csv(path):
    with open(path, newline="") as file:
        reader = csv.reader(file)
        assert tuple(next(reader)) == CSV_COLUMNS
        return [row for row in reader]


def read_tensorboard(directory):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(str(directory), size_guidance={"scalars": 0, "tensors": 0})
    accumulator.Reload()
    scalars = {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)]
        for tag in accumulator.Tags()["scalars"]
    }
    return accumulator, scalars


def mlflow_run(artifact_dir):
    from mlflow import MlflowClient

    record = json.loads((artifact_dir / "mlflow-run.json").read_text())
    client = MlflowClient(tracking_uri=f"sqlite:///{artifact_dir / 'mlflow.db'}")
    run = client.get_run(record["run_id"])
    history = {
        key: [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, key)]
        for key in run.data.metrics
    }
    return client, run, history


def wandb_rows(artifact_dir):
    """Every history row of the run, from every offline session's `.wandb` file, in order."""
    from burnish.train.logger.wandb_logger import read_wandb_history

    run_id = json.loads((artifact_dir / "wandb-run.json").read_text())["id"]
    paths = sorted((artifact_dir / "wandb").glob(f"offline-run-*-{run_id}/run-{run_id}.wandb"))
    assert paths, f"no offline run directory for {run_id}"
    return run_id, paths, [row for path in paths for row in read_wandb_history(path)]


# ------------------------------------------------------------------ expected points
def expected_epoch_points(last_epoch):
    """(split, metric, epoch) -> value, the lr included (train only)."""
    points = {}
    for epoch in range(1, last_epoch + 1):
        for split in ("train", "valid"):
            for name, value in epoch_values(split, epoch).items():
                points[(split, name, epoch)] = value
        points[("train", "lr", epoch)] = lr_of(step_of(epoch, TRAIN_ITERATIONS))
    return points


def expected_step_points(last_epoch):
    """(metric, step) -> value of the train iterations, the lr included."""
    points = {}
    for epoch in range(1, last_epoch + 1):
        for iteration in range(1, TRAIN_ITERATIONS + 1):
            step = step_of(epoch, iteration)
            for name, value in iteration_values("train", epoch, iteration).items():
                points[(name, step)] = value
            points[("lr", step)] = lr_of(step)
    return points


def expected_csv_rows(last_epoch):
    rows = Counter()
    for epoch in range(1, last_epoch + 1):
        for split, count in (("train", TRAIN_ITERATIONS), ("valid", VALID_ITERATIONS)):
            for iteration in range(1, count + 1):
                for name, value in iteration_values(split, epoch, iteration).items():
                    rows[(epoch, iteration, split, name, value)] += 1
                if split == "train":
                    rows[(epoch, iteration, split, "lr", lr_of(step_of(epoch, iteration)))] += 1
            for name, value in epoch_values(split, epoch).items():
                rows[(epoch, "", split, name, value)] += 1
        rows[(epoch, "", "train", "lr", lr_of(step_of(epoch, TRAIN_ITERATIONS)))] += 1
    return rows


def csv_rows(path):
    return Counter(
        (int(e), int(i) if i else "", s, m, float(v)) for e, i, s, m, v in read_csv(path)
    )


def assert_tensorboard_points(scalars, last_epoch):
    """Each tag's steps are unique and hold the expected values (float32 in event files)."""
    epochs = expected_epoch_points(last_epoch)
    steps = expected_step_points(last_epoch)
    expected = {}
    for (split, name, epoch), value in epochs.items():
        expected.setdefault(f"{split}/{name}", []).append((epoch, value))
    for (name, step), value in steps.items():
        expected.setdefault(f"iteration/train/{name}", []).append((step, value))
    assert set(scalars) == set(expected)
    for tag, points in expected.items():
        assert [s for s, _ in scalars[tag]] == [s for s, _ in sorted(points)], tag
        for (_, got), (_, want) in zip(scalars[tag], sorted(points)):
            assert got == pytest.approx(want, rel=1e-6), tag


def assert_mlflow_points(history, last_epoch):
    expected = {}
    for (split, name, epoch), value in expected_epoch_points(last_epoch).items():
        expected.setdefault(f"{split}/{name}", []).append((epoch, value))
    for (name, step), value in expected_step_points(last_epoch).items():
        expected.setdefault(f"iteration/train/{name}", []).append((step, value))
    assert set(history) == set(expected)
    for key, points in expected.items():
        assert sorted(history[key]) == sorted(points), key


def assert_wandb_points(rows, last_epoch):
    """Each (metric, epoch) and (metric, step) once, with its value (exact: JSON floats)."""
    epochs, steps = {}, {}
    for row in rows:
        for key, value in row.items():
            split, _, name = key.partition("/")
            if split in ("train", "valid") and "epoch" in row:
                epochs.setdefault((split, name, row["epoch"]), []).append(float(value))
            elif key.startswith("iteration/train/"):
                name = key.removeprefix("iteration/train/")
                steps.setdefault((name, row["global_step"]), []).append(float(value))
    assert epochs == {k: [v] for k, v in expected_epoch_points(last_epoch).items()}
    assert steps == {k: [v] for k, v in expected_step_points(last_epoch).items()}


# ------------------------------------------------------------------ the base
def test_import_burnish_imports_no_tracker_package():
    """`import burnish` and the logger modules load no optional package (checked in a fresh
    interpreter: this one may have imported them)."""
    code = (
        "import sys, burnish, burnish.train, burnish.train.logger, burnish.train.metric\n"
        "import burnish.train.logger.tracker, burnish.train.logger.csv_logger\n"
        "import burnish.train.logger.tensorboard_logger, burnish.train.logger.mlflow_logger\n"
        "import burnish.train.logger.wandb_logger, burnish.train.metric.torchmetric\n"
        "import burnish.train.output\n"
        f"print(sorted(m for m in {OPTIONAL!r} if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr


@pytest.mark.parametrize(
    ("module", "cls", "extra"),
    [
        ("torch.utils.tensorboard", "TensorBoardLogger", "tensorboard"),
        ("mlflow", "MlflowLogger", "mlflow"),
        ("wandb", "WandbLogger", "wandb"),
    ],
)
def test_missing_package_names_its_extra(monkeypatch, module, cls, extra):
    import importlib

    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` raise ImportError
    source = importlib.import_module(f"burnish.train.logger.{extra}_logger")
    with pytest.raises(ImportError, match=rf"pip install 'burnish\[{extra}\]'"):
        getattr(source, cls)()


def test_missing_torchmetrics_names_its_extra(monkeypatch):
    from burnish.train.metric.torchmetric import TorchMetric

    monkeypatch.setitem(sys.modules, "torchmetrics", None)
    with pytest.raises(ImportError, match=r"pip install 'burnish\[torchmetrics\]'"):
        TorchMetric(object())


def test_resume_position_keeps_what_happened_before_it():
    mid_train = ResumePosition(epoch=3, iteration=2, step=10)
    assert mid_train.keeps_epoch("train", 2) and mid_train.keeps_epoch("valid", 2)
    assert not mid_train.keeps_epoch("train", 3) and not mid_train.keeps_epoch("valid", 3)
    assert mid_train.keeps_iteration("train", 3, 2) and not mid_train.keeps_iteration("train", 3, 3)
    assert not mid_train.keeps_iteration("valid", 3, 1)
    assert mid_train.keeps_step(10) and not mid_train.keeps_step(11)
    in_valid = ResumePosition(epoch=3, iteration=4, step=12, train_ended=True)
    assert in_valid.keeps_epoch("train", 3) and not in_valid.keeps_epoch("valid", 3)
    assert not in_valid.keeps_iteration("valid", 3, 1)
    with pytest.raises(ValueError, match="epoch"):
        ResumePosition(epoch=0)


def test_flatten_config_accepts_burnish_configs_and_dataclasses():
    import burnish as bn

    @bn.config
    class Inner:
        size: int = 3

    @bn.config
    class Outer:
        inner: Inner
        name: str = "x"
        sizes: tuple = (1, 2)

    assert flatten_config(Outer(Inner())) == {"inner.size": 3, "name": "x", "sizes": "[1, 2]"}
    info = RunInfo(Path("."), {"a": {"b": None}}, {"num_epochs": 2})
    assert info.params() == {"a.b": None, "num_epochs": 2}
    with pytest.raises(TypeError, match="mapping"):
        flatten_config(3)


# ------------------------------------------------------------------ CSV
def test_csv_is_one_tidy_table(tmp_path):
    logger = CsvLogger()
    logger.start(run_info(tmp_path))
    play([logger], 1, 2)
    logger.finish("summary")
    logger.close()
    logger.close()  # twice is fine
    assert csv_rows(tmp_path / "metrics.csv") == expected_csv_rows(2)
    # Epoch rows have an empty iteration.
    rows = read_csv(tmp_path / "metrics.csv")
    assert ["2", "", "valid", "Loss", repr(epoch_values("valid", 2)["Loss"])] in rows


def test_csv_reads_in_pandas_as_is(tmp_path):
    pandas = pytest.importorskip("pandas")
    with CsvLogger(tmp_path / "out" / "m.csv") as logger:
        logger.start(run_info(tmp_path))
        play([logger], 1, 1)
    frame = pandas.read_csv(tmp_path / "out" / "m.csv")
    assert list(frame.columns) == list(CSV_COLUMNS)
    epoch_rows = frame[frame.iteration.isna()]
    assert len(epoch_rows) == 5  # train Loss, Accuracy, lr; valid Loss, Accuracy


def test_csv_fresh_start_replaces_the_previous_table(tmp_path):
    for _ in range(2):
        with CsvLogger() as logger:
            logger.start(run_info(tmp_path))
            play([logger], 1, 1)
    assert csv_rows(tmp_path / "metrics.csv") == expected_csv_rows(1)


def test_csv_resume_mid_epoch_drops_later_rows_and_a_torn_line(tmp_path):
    path = tmp_path / "metrics.csv"
    logger = CsvLogger()
    logger.start(run_info(tmp_path))
    play([logger], 1, 1)
    play_train([logger], 2, 0, 3, end=False)
    logger.close()
    with open(path, "a") as file:
        file.write("2,4,train,Lo")  # a row cut short by a crash
    # Resume after iteration 2 of epoch 2: iteration 3 is logged again.
    logger = CsvLogger()
    logger.start(run_info(tmp_path, ResumePosition(2, 2, step_of(2, 2))))
    play_train([logger], 2, 2, TRAIN_ITERATIONS)
    play_valid([logger], 2)
    logger.close()
    assert csv_rows(path) == expected_csv_rows(2)


def test_csv_resume_during_validation_keeps_the_train_epoch(tmp_path):
    path = tmp_path / "metrics.csv"
    with CsvLogger() as logger:
        logger.start(run_info(tmp_path))
        play_train([logger], 1)
        logger.log_iteration("valid", 1, 1, 4, iteration_values("valid", 1, 1))
    with CsvLogger() as logger:
        position = ResumePosition(1, TRAIN_ITERATIONS, step_of(1, 4), train_ended=True)
        logger.start(run_info(tmp_path, position))
        play_valid([logger], 1)
    assert csv_rows(path) == expected_csv_rows(1)


def test_csv_rewrite_failure_keeps_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "metrics.csv"
    with CsvLogger() as logger:
        logger.start(run_info(tmp_path))
        play([logger], 1, 2)
    before = path.read_bytes()

    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        CsvLogger().start(run_info(tmp_path, ResumePosition(2)))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.csv"]  # no temp file left


def test_csv_refuses_a_foreign_file(tmp_path):
    (tmp_path / "metrics.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="not a table written by CsvLogger"):
        CsvLogger().start(run_info(tmp_path, ResumePosition(2)))


def test_loggers_need_start(tmp_path):
    with pytest.raises(RuntimeError, match="start"):
        CsvLogger().log_epoch("train", 1, {"Loss": 1.0})
    with pytest.raises(ValueError, match="split"):
        CsvLogger().log_epoch("test", 1, {"Loss": 1.0})


# ------------------------------------------------------------------ TensorBoard
def test_tensorboard_scalars_hparams_and_summary(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.plugins.hparams import plugin_data_pb2

    from burnish.train.logger.tensorboard_logger import TensorBoardLogger

    logger = TensorBoardLogger()
    logger.start(run_info(tmp_path))
    play([logger], 1, 2)
    logger.finish("Learner Summary\n| Loss | 0.1 |")
    logger.close()
    accumulator, scalars = read_tensorboard(tmp_path / "tensorboard")
    assert_tensorboard_points(scalars, 2)
    assert "valid/Loss" in scalars
    content = accumulator.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = start.session_start_info.hparams
    assert hparams["model.hidden"].number_value == 32
    assert hparams["optimizer.name"].string_value == "adam"
    assert hparams["model.layers"].string_value == "[2, 3]"
    assert hparams["num_epochs"].number_value == 5
    assert "_hparams_/session_end_info" in content
    text = accumulator.Tensors("summary/text_summary")[0].tensor_proto.string_val[0].decode()
    assert "Learner Summary" in text


def test_tensorboard_fresh_start_replaces_and_epochs_only(tmp_path):
    pytest.importorskip("tensorboard")
    from burnish.train.logger.tensorboard_logger import TensorBoardLogger

    for _ in range(2):
        with TensorBoardLogger(tmp_path / "tb", iterations=False) as logger:
            logger.start(run_info(tmp_path))
            play([logger], 1, 2)
    _, scalars = read_tensorboard(tmp_path / "tb")
    assert sorted(scalars) == [
        "train/Accuracy",
        "train/Loss",
        "train/lr",
        "valid/Accuracy",
        "valid/Loss",
    ]
    assert [step for step, _ in scalars["valid/Loss"]] == [1, 2]


def test_tensorboard_interrupted_rewrite_is_completed(tmp_path):
    """A crash after the history file was committed (`.ready`) but before the old files were
    removed: the next start finishes the rewrite instead of duplicating points."""
    pytest.importorskip("tensorboard")
    from burnish.train.logger import tensorboard_logger
    from burnish.train.logger.tensorboard_logger import TensorBoardLogger

    with TensorBoardLogger() as logger:
        logger.start(run_info(tmp_path))
        play([logger], 1, 3)
    original = tensorboard_logger._finish_rewrite
    calls = []

    def crash_once(directory, keep_ready):
        calls.append(keep_ready)
        if len(calls) == 2:  # the commit step of the rewrite
            raise KeyboardInterrupt("killed")
        original(directory, keep_ready)

    tensorboard_logger._finish_rewrite = crash_once
    try:
        with pytest.raises(KeyboardInterrupt):
            TensorBoardLogger().start(run_info(tmp_path, ResumePosition(3, 0, step_of(2, 4))))
    finally:
        tensorboard_logger._finish_rewrite = original
    assert (tmp_path / "tensorboard" / "burnish-rewrite.ready").exists()
    with TensorBoardLogger() as logger:
        logger.start(run_info(tmp_path, ResumePosition(3, 0, step_of(2, 4))))
        play([logger], 3, 3)
    _, scalars = read_tensorboard(tmp_path / "tensorboard")
    assert_tensorboard_points(scalars, 3)


# ------------------------------------------------------------------ MLflow
def test_mlflow_params_metrics_summary_and_model(tmp_path, mlflow_db):
    from burnish.train.logger.mlflow_logger import MlflowLogger

    with_mlflow_store(tmp_path, mlflow_db)

    logger = MlflowLogger(experiment="tests", run_name="first")
    logger.start(run_info(tmp_path))
    play([logger], 1, 2)
    logger.log_epoch("valid", 3, {"FBetaScore (1) @ TopK(1) [Macro]": 0.5})
    model = tmp_path / "model.mpk"
    model.write_bytes(b"\x00weights")
    logger.finish("Learner Summary", model)
    logger.close()

    client, run, history = mlflow_run(tmp_path)
    assert run.info.status == "FINISHED"
    assert run.info.run_name == "first"
    assert run.data.params == {
        "model.hidden": "32",
        "model.layers": "[2, 3]",
        "optimizer.name": "adam",
        "lr": "0.01",
        "num_epochs": "5",
        "devices": "cpu",
    }
    assert history.pop("valid/FBetaScore _1_ _ TopK_1_ _Macro_") == [(3, 0.5)]
    assert_mlflow_points(history, 2)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert artifacts == {"summary.txt", "model"}
    assert [a.path for a in client.list_artifacts(run.info.run_id, "model")] == ["model/model.mpk"]
    local = Path(client.download_artifacts(run.info.run_id, "model/model.mpk", str(tmp_path)))
    assert local.read_bytes() == b"\x00weights"
    # Artifacts live in the artifact directory, not in the working directory.
    assert (tmp_path / "mlflow-artifacts").is_dir()
    assert not (Path.cwd() / "mlruns").exists()


# ------------------------------------------------------------------ W&B
def test_wandb_offline_run_directory(tmp_path, wandb_home):
    pytest.importorskip("wandb")
    from wandb.proto import wandb_internal_pb2

    from burnish.train.logger.wandb_file import _records
    from burnish.train.logger.wandb_logger import WandbLogger

    logger = WandbLogger(project="tests", name="first", settings=schedule.wandb_settings())
    logger.start(run_info(tmp_path))
    play([logger], 1, 2)
    model = tmp_path / "model.mpk"
    model.write_bytes(b"weights")
    logger.finish("Learner Summary", model)
    logger.close()

    run_id, paths, rows = wandb_rows(tmp_path)
    assert len(paths) == 1
    assert_wandb_points(rows, 2)
    run_dir = paths[0].parent
    assert (run_dir / "files" / "summary.txt").read_text() == "Learner Summary\n"
    kinds, config, artifacts, exit_code = Counter(), {}, [], None
    for data in _records(paths[0]):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        kinds[kind] += 1
        if kind == "run":
            assert record.run.run_id == run_id
            assert record.run.display_name == "first"
            config = {i.key: json.loads(i.value_json) for i in record.run.config.update}
        elif kind == "artifact":
            artifacts.append(
                (record.artifact.type, [e.path for e in record.artifact.manifest.contents])
            )
        elif kind == "exit":
            exit_code = record.exit.exit_code
    assert config["model.hidden"] == 32
    assert config["num_epochs"] == 5
    assert artifacts == [("model", ["model.mpk"])]
    assert exit_code == 0


# ------------------------------------------------------------------ crash and resume
@pytest.mark.slow
def test_sigkill_then_resume_stores_each_point_once(tmp_path, wandb_home, request):
    """Session 1 logs epochs 1-3 and half of 4 (a checkpoint after epoch 2) and is SIGKILLed;
    session 2 resumes from that checkpoint and logs epochs 3-5 with the same values."""
    names = ["csv"]
    for module, name in (("tensorboard", "tensorboard"), ("mlflow", "mlflow"), ("wandb", "wandb")):
        try:
            __import__(module)
            names.append(name)
        except ImportError:
            pass
    if "mlflow" in names:
        with_mlflow_store(tmp_path, request.getfixturevalue("mlflow_db"))
    env = {**os.environ, **schedule.wandb_env(wandb_home)}
    env.pop("WANDB_SERVICE", None)  # its own W&B service, dying with it, as in a real crash
    crashed = subprocess.run(
        [sys.executable, str(CRASH_SCRIPT), str(tmp_path), ",".join(names)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )
    assert crashed.returncode == -9, crashed.stderr[-3000:]
    # The interrupted session stored points past the checkpoint, in every store.
    assert any(row[0] == "3" for row in read_csv(tmp_path / "metrics.csv"))
    if "tensorboard" in names:
        assert (3, pytest.approx(epoch_values("valid", 3)["Loss"])) in read_tensorboard(
            tmp_path / "tensorboard"
        )[1]["valid/Loss"]
    if "mlflow" in names:
        assert (3, epoch_values("valid", 3)["Loss"]) in mlflow_run(tmp_path)[2]["valid/Loss"]
    if "wandb" in names:
        assert any(row.get("epoch") == 3 for row in wandb_rows(tmp_path)[2])

    loggers = make_loggers(tmp_path, names)
    resume = ResumePosition(epoch=3, iteration=0, step=step_of(2, TRAIN_ITERATIONS))
    for logger in loggers:
        logger.start(run_info(tmp_path, resume))
    play(loggers, 3, 5)
    for logger in loggers:
        logger.finish("summary")
        logger.close()

    assert csv_rows(tmp_path / "metrics.csv") == expected_csv_rows(5)
    if "tensorboard" in names:
        _, scalars = read_tensorboard(tmp_path / "tensorboard")
        assert_tensorboard_points(scalars, 5)
        files = sorted(p.name for p in (tmp_path / "tensorboard").iterdir())
        assert files[0].endswith("burnish-history") and len(files) == 2
    if "mlflow" in names:
        client, run, history = mlflow_run(tmp_path)
        assert run.info.status == "FINISHED"
        assert len(client.search_runs([run.info.experiment_id])) == 1  # the same run continued
        assert_mlflow_points(history, 5)
    if "wandb" in names:
        _, paths, rows = wandb_rows(tmp_path)
        assert len(paths) == 2  # offline: one directory per session, one run id
        assert_wandb_points(rows, 5)


def test_values_are_host_floats_and_nan_is_kept(tmp_path):
    import torch

    with CsvLogger() as logger:
        logger.start(run_info(tmp_path))
        logger.log_epoch("train", 1, {"Loss": torch.tensor(0.5), "Bad": float("nan")})
    rows = read_csv(tmp_path / "metrics.csv")
    assert rows[0][4] == "0.5" and math.isnan(float(rows[1][4]))

"""MLflow runs: params, metrics with steps, the summary and the final model
(`pip install 'burnish[mlflow]'`)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from burnish.io import atomic_write_bytes
from burnish.train.logger.tracker import (
    ITERATION_GROUP,
    ExperimentLogger,
    RunInfo,
    check_position,
    import_extra,
    scalars,
)
from burnish.train.split import Split, check_split

__all__ = ["MlflowLogger"]

log = logging.getLogger("burnish.train")

RUN_FILE = "mlflow-run.json"
DEFAULT_STORE = "mlflow.db"  # the default store, in the artifact directory
ARTIFACTS = "mlflow-artifacts"  # the default store's artifact root, beside it
_UNSAFE = re.compile(r"[^\w.\- ]")  # MLflow keys: alphanumerics, _ . - space (and / between)
_BATCH = 100  # params (and tags) per log_batch request: MLflow's limit
_METRICS_BATCH = 1000  # metrics per log_batch request: MLflow's limit


class MlflowLogger(ExperimentLogger):
    """Log a run to MLflow: `mlflow ui --backend-store-uri sqlite:///<artifact_dir>/mlflow.db`.

    - Params: the config flattened with `.` and the learner's settings.
    - Metrics: `<split>/<Metric>` at step = epoch; `train/lr`; the iteration values (training
      only) as `iteration/train/<Metric>` at step = global training step. Characters MLflow
      rejects in a key become `_`.
    - At the end: the summary as `summary.txt` and the final model under `model/`.

    The run's id is kept in `<artifact_dir>/mlflow-run.json`. A resumed learner continues that
    run: since MLflow cannot delete a point, every key is logged only past the last step the
    interrupted run stored for it (an exact resume re-logs the same values there, so nothing
    is lost or duplicated). A fresh start creates a new run. A branch (`checkpoint(N)` from a
    run that went further) cannot rewrite the points past N, so it starts a new run, tagged
    `mlflow.parentRunId` = the run it leaves and `burnish.branch`, holding the parent's
    points up to the branch point (copied) and the branch's params; the record then names it.

    The default store moves with the artifact directory: the record names it relative to the
    directory, so a resume in a moved or copied directory continues the same run (the store's
    artifact locations are rewritten to the directory's new place). Where a new run cannot be
    avoided (the recorded run or store is gone, or `tracking_uri` names another store), the
    learner says so on the console.

    Args:
        tracking_uri: The tracking store; None: a SQLite file `<artifact_dir>/mlflow.db`,
            with artifacts in `<artifact_dir>/mlflow-artifacts`.
        experiment: The experiment's name (created if missing).
        run_name: The run's name; None: MLflow picks one.
        iterations: Also log the iteration values (False: epoch values only).

    Raises:
        ImportError: if mlflow (or, for a SQLite store, SQLAlchemy and Alembic) is missing.
    """

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str = "burnish",
        run_name: str | None = None,
        iterations: bool = True,
    ) -> None:
        self._mlflow = import_extra("mlflow", "mlflow", "mlflow", "MlflowLogger")
        if not isinstance(experiment, str) or not experiment:
            raise ValueError(f"`experiment` must be a non-empty name. Received: {experiment!r}.")
        self.tracking_uri = tracking_uri
        self.experiment = experiment
        self.run_name = run_name
        self.iterations = bool(iterations)
        self.uri: str | None = None  # the store in use: `tracking_uri` or the default
        self.run_id: str | None = None
        self._client: Any = None
        self._last: dict[str, int] = {}  # key -> the last step already in the store
        self._past: dict[str, list[int]] = {}  # key -> its steps past a resume point
        self._finished = False

    def __repr__(self) -> str:
        return f"MlflowLogger(tracking_uri={self.tracking_uri!r}, experiment={self.experiment!r})"

    # ---------------------------------------------------------------- start
    def start(self, run: RunInfo) -> None:
        """Create (fresh start) or reopen (resume) the MLflow run; log its params."""
        self.close()
        artifact_dir = Path(run.artifact_dir)
        artifact_dir.mkdir(parents=True, exist_ok=True)
        default = self.tracking_uri is None
        uri = self.tracking_uri or f"sqlite:///{(artifact_dir / DEFAULT_STORE).resolve()}"
        if uri.startswith("sqlite:"):
            for module in ("sqlalchemy", "alembic"):
                import_extra(module, "mlflow", module, "MlflowLogger (with a SQLite store)")
        self.uri = uri
        run_file = artifact_dir / RUN_FILE
        record = _read_record(run_file, run) if run.resume is not None else None
        if record is not None and default and _default_store(record):
            _relocate(artifact_dir, record)  # the directory may have moved since
            record["tracking_uri"] = uri
        self._client = self._mlflow.MlflowClient(tracking_uri=uri)
        self._finished = False
        self._last, self._past = {}, {}
        self.run_id = self._resumed_run(record, run) if record is not None else None
        line = record.get("line") if record is not None and self.run_id is not None else None
        if self.run_id is not None and line != run.branch:  # the run is on another line now
            self.run_id = self._branch_run(self.run_id, run, run.branch or "line 0")
            line = run.branch
        elif self.run_id is not None and self._past and not self._rewind(run):
            assert run.resume is not None
            self.run_id = self._branch_run(self.run_id, run, f"resumed at step {run.resume.step}")
        elif self.run_id is not None:
            self._client.update_run(self.run_id, status="RUNNING")
        if self.run_id is None:
            self.run_id = self._new_run(artifact_dir, default_store=default)
            line = run.branch
        new = {"tracking_uri": uri, "run_id": self.run_id}
        if default:
            new["store"] = DEFAULT_STORE
        if line is not None:
            new["line"] = line
        atomic_write_bytes(run_file, json.dumps(new, indent=2).encode())
        self._log_params(run.params())

    def _new_run(self, artifact_dir: Path, default_store: bool) -> str:
        client = self._client
        found = client.get_experiment_by_name(self.experiment)
        if found is not None:
            experiment_id = found.experiment_id
        else:
            location = None
            if default_store:
                location = (artifact_dir / ARTIFACTS).resolve().as_uri()
            experiment_id = client.create_experiment(self.experiment, artifact_location=location)
        created = client.create_run(experiment_id, run_name=self.run_name)
        return created.info.run_id

    def _resumed_run(self, record: dict[str, Any], run: RunInfo) -> str | None:
        """The interrupted run's id, and the last step of each of its keys; None if gone."""
        run_id = str(record["run_id"])
        if record.get("tracking_uri") != self.uri:
            run.warning(
                f"MlflowLogger: the interrupted run {run_id} is in {record.get('tracking_uri')}, "
                f"not {self.uri}; starting a new MLflow run (give tracking_uri= the store "
                "it is in to continue it)."
            )
            return None
        from mlflow.exceptions import MlflowException

        try:
            found = self._client.get_run(run_id)
        except MlflowException:
            run.warning(
                f"MlflowLogger: run {run_id} is gone from {self.uri}; starting a new MLflow run."
            )
            return None
        for key in found.data.metrics:
            history = self._client.get_metric_history(run_id, key)
            kept = [m.step for m in history if _kept(key, m.step, run)]
            self._last[key] = max(kept, default=-1)
            past = sorted({m.step for m in history} - set(kept))
            if past:
                self._past[key] = past
        return run_id

    def _rewind(self, run: RunInfo) -> bool:
        """Delete the points the interrupted run logged past the resume point (`_past`), which
        the resumed run logs again (a stop for a non-finite loss, an error, a kill after the
        last checkpoint): possible in a SQLite store, which MLflow's API cannot do. False for
        other stores (the caller starts a new run instead)."""
        import sqlite3

        assert self.uri is not None and self.run_id is not None
        if not self.uri.startswith("sqlite:///"):
            return False
        store = self.uri.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(store)) as db, db:
            for key, steps in self._past.items():
                for step in steps:
                    db.execute(
                        "DELETE FROM metrics WHERE run_uuid = ? AND key = ? AND step = ?",
                        (self.run_id, key, step),
                    )
                db.execute(
                    "DELETE FROM latest_metrics WHERE run_uuid = ? AND key = ?", (self.run_id, key)
                )
                db.execute(
                    "INSERT INTO latest_metrics (key, value, timestamp, step, is_nan, run_uuid) "
                    "SELECT key, value, timestamp, step, is_nan, run_uuid FROM metrics "
                    "WHERE run_uuid = ? AND key = ? "
                    "ORDER BY step DESC, timestamp DESC, value DESC LIMIT 1",
                    (self.run_id, key),
                )
        count = sum(map(len, self._past.values()))
        log.info(
            "MlflowLogger: deleted %d points run %s logged past the resume point (step %s).",
            count,
            self.run_id,
            run.resume.step if run.resume is not None else None,
        )
        self._client.update_run(self.run_id, status="RUNNING")
        return True

    def _branch_run(self, parent: str, run: RunInfo, label: str) -> str:
        """A new run, a child of `parent` (`mlflow.parentRunId`) named `<parent's name> /
        <label>`, holding the parent's points up to `run.resume` copied, with the run's params:
        for a branch (`label` is its line), or a resume past points it cannot delete. The
        parent keeps its whole history."""
        from mlflow.entities import Metric

        assert run.resume is not None
        client = self._client
        found = client.get_run(parent)
        parent_name = found.data.tags.get("mlflow.runName") or self.run_name or parent
        tags = {"mlflow.parentRunId": parent, "burnish.branch": label}
        name = f"{parent_name} / {label}"
        created = client.create_run(found.info.experiment_id, run_name=name, tags=tags)
        run_id = created.info.run_id
        kept, self._last = [], {}
        for key in found.data.metrics:
            group, _, rest = key.partition("/")
            for point in client.get_metric_history(parent, key):
                if group == ITERATION_GROUP:
                    keep = run.resume.keeps_step(point.step)
                else:
                    keep = run.resume.keeps_epoch(group, point.step)
                if keep and rest:
                    kept.append(Metric(key, point.value, point.timestamp, point.step))
                    self._last[key] = max(self._last.get(key, -1), point.step)
        for start in range(0, len(kept), _METRICS_BATCH):
            client.log_batch(run_id, metrics=kept[start : start + _METRICS_BATCH])
        why = (
            f"{label} is a new MLflow run"
            if label == (run.branch or "line 0")
            else (
                "the store cannot delete the points the interrupted run logged past its "
                "checkpoint: the run continues as a new MLflow run"
            )
        )
        run.info(
            f"MlflowLogger: {why} {run_id}, child of {parent} (mlflow.parentRunId), with its "
            f"{len(kept)} points up to the checkpoint copied."
        )
        return run_id

    def _log_params(self, params: Mapping[str, Any]) -> None:
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

        existing = self._client.get_run(self.run_id).data.params
        new = []
        for name, value in params.items():
            key, text = _key(name), str(value)[:MAX_PARAM_VAL_LENGTH]
            if key not in existing:
                new.append(Param(key, text))
            elif existing[key] != text:
                log.warning(
                    "MlflowLogger: param %r was %r in the interrupted run and is %r now; "
                    "MLflow keeps the first value.",
                    key,
                    existing[key],
                    text,
                )
        for start in range(0, len(new), _BATCH):
            self._client.log_batch(self.run_id, params=new[start : start + _BATCH])

    # ---------------------------------------------------------------- logging
    def log_iteration(
        self,
        split: str,
        epoch: int,
        iteration: int,
        step: int,
        values: Mapping[str, float],
        lr: float | None = None,
    ) -> None:
        """Log `iteration/train/<Metric>` at `step` (validation iterations: skipped)."""
        split = check_split(split)
        check_position(epoch, iteration, step)
        if not self.iterations or split != Split.TRAIN:
            return
        self._log(f"{ITERATION_GROUP}/{split}/", step, scalars(values, lr))

    def log_epoch(
        self, split: str, epoch: int, values: Mapping[str, float], lr: float | None = None
    ) -> None:
        """Log `<split>/<Metric>` (and `<split>/lr`) at step = `epoch`."""
        split = check_split(split)
        check_position(epoch)
        self._log(f"{split}/", epoch, scalars(values, lr))

    def _log(self, prefix: str, step: int, values: dict[str, float]) -> None:
        from mlflow.entities import Metric

        self._open()
        now = int(time.time() * 1000)
        metrics = []
        for name, value in values.items():
            key = prefix + _key(name)
            if step <= self._last.get(key, -1):
                continue  # the interrupted run stored this point already
            self._last[key] = step
            metrics.append(Metric(key, value, now, step))
        if metrics:
            self._client.log_batch(self.run_id, metrics=metrics)

    # ---------------------------------------------------------------- end
    def finish(
        self, summary: str | None = None, model_path: str | os.PathLike | None = None
    ) -> None:
        """Store the summary (`summary.txt`) and the model (`model/`); end the run FINISHED."""
        client = self._open()
        if summary:
            client.log_text(self.run_id, str(summary), "summary.txt")
        if model_path is not None:
            path = Path(model_path)
            if path.is_dir():
                client.log_artifacts(self.run_id, str(path), "model")
            elif path.is_file():
                client.log_artifact(self.run_id, str(path), "model")
            else:
                raise FileNotFoundError(
                    f"MlflowLogger.finish: the model file {str(path)!r} does not exist. "
                    "Save the model before finishing, or pass model_path=None."
                )
        client.set_terminated(self.run_id, "FINISHED")
        self._finished = True

    def close(self) -> None:
        """End the run: KILLED if `finish` was not called (a resume reopens it)."""
        if self._client is not None and self.run_id is not None and not self._finished:
            self._client.set_terminated(self.run_id, "KILLED")
            self._finished = True
        self._client = None

    def _open(self) -> Any:
        if self._client is None:
            raise RuntimeError("MlflowLogger is not started: the learner calls `start(run)` first.")
        return self._client


def _kept(key: str, step: int, run: RunInfo) -> bool:
    """Whether the point of `key` at `step` is before `run.resume` (kept by a resumed run)."""
    assert run.resume is not None
    group, _, _ = key.partition("/")
    if group == ITERATION_GROUP:
        return run.resume.keeps_step(step)
    return run.resume.keeps_epoch(group, step)


def _read_record(run_file: Path, run: RunInfo) -> dict[str, Any] | None:
    """The run record (`mlflow-run.json`) of the interrupted run; None (said) if unreadable."""
    try:
        record = json.loads(run_file.read_text(encoding="utf-8"))
        str(record["run_id"])
    except (OSError, ValueError, KeyError, TypeError):
        run.warning(f"MlflowLogger: no run to resume in {run_file}; starting a new MLflow run.")
        return None
    return dict(record)


def _default_store(record: Mapping[str, Any]) -> bool:
    """Whether the record's store is the default one in the artifact directory (records
    written before the `store` entry name it only by its absolute URI)."""
    if "store" in record:
        return record["store"] == DEFAULT_STORE
    uri = str(record.get("tracking_uri", ""))
    return uri.startswith("sqlite:///") and Path(uri).name == DEFAULT_STORE


def _relocate(artifact_dir: Path, record: Mapping[str, Any]) -> None:
    """Point the default store's artifact locations at `artifact_dir` after a move or copy.

    The store (SQLite, in the artifact directory) holds its artifact root as an absolute URI;
    the record says where the directory was. Locations under the old root are rewritten to
    the same place under the new one; nothing is done when the directory has not moved.
    """
    import sqlite3

    uri = str(record.get("tracking_uri", ""))
    store = artifact_dir / DEFAULT_STORE
    if not uri.startswith("sqlite:///") or not store.is_file():
        return
    old = (Path(uri.removeprefix("sqlite:///")).parent / ARTIFACTS).as_uri()
    new = (artifact_dir / ARTIFACTS).resolve().as_uri()
    if old == new:
        return
    with contextlib.closing(sqlite3.connect(store)) as db, db:
        for table, column in (("experiments", "artifact_location"), ("runs", "artifact_uri")):
            db.execute(
                f"UPDATE {table} SET {column} = ? || substr({column}, ?) "
                f"WHERE {column} = ? OR substr({column}, 1, ?) = ?",
                (new, len(old) + 1, old, len(old) + 1, old + "/"),
            )
    log.info("MlflowLogger: the store moved from %s; its artifacts are now under %s.", old, new)


def _key(name: str) -> str:
    """`name` with the characters MLflow rejects in a key replaced by `_`."""
    return _UNSAFE.sub("_", str(name)).strip() or "_"

"""Weights & Biases runs, online or offline (`pip install 'burnish[wandb]'`)."""

from __future__ import annotations

import json
import logging
import os
import secrets
import string
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
from burnish.train.logger.wandb_file import (
    HistoryTail,
    read_wandb_history,
    wait_for_exit_record,
)
from burnish.train.split import TRAINING_SPLITS, Split, check_split

__all__ = ["WandbLogger", "read_wandb_history"]

log = logging.getLogger("burnish.train")

RUN_FILE = "wandb-run.json"
EPOCH_KEY = "epoch"
STEP_KEY = "global_step"


class WandbLogger(ExperimentLogger):
    """Log a run to Weights & Biases; `mode="offline"` (the default) needs no account or network.

    - Config: the config flattened with `.` and the learner's settings.
    - Metrics: `<split>/<Metric>` and `train/lr` against `epoch`; the iteration values
      (training only) as `iteration/train/<Metric>` against `global_step`.
    - At the end: the summary as the file `summary.txt` and the final model as an artifact of
      type `model`.

    Offline, the run is written to `<dir>/wandb/offline-run-<time>-<id>/`; upload it later
    with `wandb sync <that directory>`.

    Resume: the run's id is kept in `<artifact_dir>/wandb-run.json` and a resumed learner
    calls `wandb.init(id=..., resume="allow")`. Offline, W&B does not reopen a run directory:
    each session writes a new `offline-run-*-<id>` directory with the same id, and
    `wandb sync` of them in order fills the one run. The logger reads the points the earlier
    sessions stored (their `.wandb` files) and logs only past them, so across the directories
    each point is stored once.

    Durability: W&B's service writes the `.wandb` file asynchronously, every `flush_interval`
    seconds (where the installed wandb has that setting, else when a 32 KiB block fills or the
    run finishes), and offers no request that forces a write. `flush()`, which the learner
    calls before it commits a checkpoint, therefore waits until every row this session logged
    is in the file (at most about `flush_interval`; up to `flush_timeout`, then a warning), so
    a crash at any time after the commit loses nothing the checkpoint covers. `finish` and
    `close` return once W&B has written the run's file completely (up to 60 s).

    Args:
        project: The W&B project.
        mode: `"offline"`, `"online"` or `"disabled"`.
        dir: Where W&B puts its `wandb/` directory; None: the artifact directory.
        name: The run's display name; None: W&B picks one.
        entity: The W&B entity (team or user) for online runs.
        iterations: Also log the iteration values (False: epoch values only).
        flush_interval: Seconds between W&B's writes of its `.wandb` file (wandb >= 0.22):
            the most a checkpoint waits for the rows logged before it.
        flush_timeout: Seconds `flush()` waits for W&B to write the rows before it warns
            and lets the checkpoint commit anyway.
        **init_kwargs: More `wandb.init` arguments (e.g. `tags`, `group`, `settings`).

    Raises:
        ImportError: if wandb is not installed.
    """

    def __init__(
        self,
        project: str = "burnish",
        mode: str = "offline",
        dir: str | os.PathLike | None = None,
        name: str | None = None,
        entity: str | None = None,
        iterations: bool = True,
        flush_interval: float = 0.2,
        flush_timeout: float = 30.0,
        **init_kwargs: Any,
    ) -> None:
        self._wandb = import_extra("wandb", "wandb", "wandb", "WandbLogger")
        if mode not in ("offline", "online", "disabled"):
            raise ValueError(
                f"`mode` must be 'offline', 'online' or 'disabled'. Received: mode={mode!r}."
            )
        self.project = project
        self.mode = mode
        self.dir = Path(dir) if dir is not None else None
        self.name = name
        self.entity = entity
        self.iterations = bool(iterations)
        self.flush_interval = float(flush_interval)
        self.flush_timeout = float(flush_timeout)
        self.finish_timeout = 60.0  # seconds `finish`/`close` wait for W&B's file
        self.init_kwargs = init_kwargs
        self.run: Any = None
        self._epochs: dict[str, int] = {}  # split -> last epoch stored by earlier sessions
        self._step = 0  # last global step stored by earlier sessions
        self._logged = 0  # history rows this session logged
        self._tail: HistoryTail | None = None  # this session's `.wandb` file, as written
        self._record: dict[str, Any] = {}  # the run record (`wandb-run.json`) and its path
        self._run_file = Path(RUN_FILE)

    def __repr__(self) -> str:
        return f"WandbLogger(project={self.project!r}, mode={self.mode!r})"

    def start(self, run: RunInfo) -> None:
        """Start (fresh) or continue (resume) the W&B run."""
        self.close()
        wandb = self._wandb
        artifact_dir = Path(run.artifact_dir)
        artifact_dir.mkdir(parents=True, exist_ok=True)
        directory = self.dir or artifact_dir
        directory.mkdir(parents=True, exist_ok=True)
        run_file = artifact_dir / RUN_FILE
        saved = _saved(run_file, run) if run.resume is not None else None
        run_id = None if saved is None else saved["id"]
        line = saved_line = None if saved is None else saved.get("line")
        self._epochs, self._step = {}, 0
        config, copied, parent, name = run.params(), [], None, self.name
        if run_id is not None:
            kept, past = _stored_rows(directory / "wandb", run_id, run)
            if line != run.branch or (past and saved is not None and saved["stopped"]):
                parent, copied = run_id, kept
                assert run.resume is not None
                label = f"resumed at step {run.resume.step}"
                if line != run.branch:
                    label = run.branch or "line 0"
                config.update({"burnish.parent_run": parent, "burnish.branch": label})
                name = f"{self.name} / {label}" if self.name else label
                run_id = None
        if run_id is not None:
            self._read_stored(directory / "wandb", run_id)
        else:
            run_id = _new_id()
        line = run.branch
        self._record = {"id": run_id} if line is None else {"id": run_id, "line": line}
        self._run_file = run_file
        atomic_write_bytes(run_file, json.dumps(self._record, indent=2).encode())
        kwargs = dict(self.init_kwargs)
        kwargs.setdefault("settings", self._settings())
        self.run = wandb.init(
            project=self.project,
            entity=self.entity,
            name=name,
            dir=str(directory),
            mode=self.mode,
            id=run_id,
            resume="allow",
            reinit="create_new",
            config=config,
            **kwargs,
        )
        self._logged = 0
        sync_file = getattr(self.run.settings, "sync_file", "") or ""
        self._tail = HistoryTail(Path(sync_file)) if self.mode == "offline" and sync_file else None
        self.run.define_metric(EPOCH_KEY)
        for split in TRAINING_SPLITS:
            self.run.define_metric(f"{split}/*", step_metric=EPOCH_KEY)
        self.run.define_metric(STEP_KEY)
        self.run.define_metric(f"{ITERATION_GROUP}/*", step_metric=STEP_KEY)
        for row in copied:  # a new run's rows shared with its parent, up to the resume point
            self._log(row)
        if parent is not None:
            why = (
                f"{run.branch} is a new W&B run"
                if line != saved_line
                else "W&B cannot rewrite the rows the interrupted run logged past its checkpoint: "
                "the run continues as a new W&B run"
            )
            run.info(
                f"WandbLogger: {why} {run_id} (config burnish.parent_run = {parent}), with its "
                f"{len(copied)} rows up to the checkpoint copied."
            )

    def _settings(self) -> Any:
        settings = self._wandb.Settings()
        if "x_transaction_log_flush_interval" in type(settings).model_fields:
            settings = self._wandb.Settings(x_transaction_log_flush_interval=self.flush_interval)
        return settings

    def _read_stored(self, wandb_dir: Path, run_id: str) -> None:
        """The last epoch of each split and the last step earlier sessions of `run_id` stored."""
        for path in sorted(wandb_dir.glob(f"*run-*-{run_id}/run-{run_id}.wandb")):
            for row in read_wandb_history(path):
                if STEP_KEY in row:
                    self._step = max(self._step, int(row[STEP_KEY]))
                if EPOCH_KEY in row:
                    for split in TRAINING_SPLITS:
                        if any(key.startswith(f"{split}/") for key in row):
                            last = self._epochs.get(split, 0)
                            self._epochs[split] = max(last, int(row[EPOCH_KEY]))

    def log_iteration(
        self,
        split: str,
        epoch: int,
        iteration: int,
        step: int,
        values: Mapping[str, float],
        lr: float | None = None,
    ) -> None:
        """Log `iteration/train/<Metric>` at `global_step` (validation iterations: skipped)."""
        split = check_split(split)
        check_position(epoch, iteration, step)
        if not self.iterations or split != Split.TRAIN or step <= self._step:
            return
        row: dict[str, Any] = {STEP_KEY: step}
        prefix = f"{ITERATION_GROUP}/{split}/"
        row.update({prefix + name: value for name, value in scalars(values, lr).items()})
        self._log(row)

    def log_epoch(
        self, split: str, epoch: int, values: Mapping[str, float], lr: float | None = None
    ) -> None:
        """Log `<split>/<Metric>` (and `<split>/lr`) at `epoch`."""
        split = check_split(split)
        check_position(epoch)
        if epoch <= self._epochs.get(split, 0):
            return  # an earlier session stored this epoch already
        row: dict[str, Any] = {EPOCH_KEY: epoch}
        row.update({f"{split}/{name}": value for name, value in scalars(values, lr).items()})
        self._log(row)

    def _log(self, row: dict[str, Any]) -> None:
        self._open().log(row)
        self._logged += 1

    def flush(self) -> None:
        """Wait until W&B has written every row logged so far to the run's `.wandb` file.

        Offline runs only (online, W&B's service uploads on its own; the file is its
        recovery copy). Returns as soon as the rows are in the file, at most about
        `flush_interval` seconds after they were logged.
        """
        if self.run is None or self._tail is None:
            return
        deadline = time.monotonic() + self.flush_timeout
        while self._tail.rows() < self._logged:
            if time.monotonic() > deadline:
                log.warning(
                    "WandbLogger: W&B had written %d of the %d rows logged to %s after %.0f s; "
                    "a crash now may lose the others (see flush_interval).",
                    self._tail.rows(),
                    self._logged,
                    self._tail.path,
                    self.flush_timeout,
                )
                return
            time.sleep(min(0.02, self.flush_interval / 4) or 0.02)

    def finish(
        self, summary: str | None = None, model_path: str | os.PathLike | None = None
    ) -> None:
        """Save the summary (`summary.txt`) and the model (an artifact); finish the run."""
        run = self._open()
        if summary:
            Path(run.dir, "summary.txt").write_text(str(summary) + "\n", encoding="utf-8")
        if model_path is not None:
            path = Path(model_path)
            if not path.exists():
                raise FileNotFoundError(
                    f"WandbLogger.finish: the model file {str(path)!r} does not exist. "
                    "Save the model before finishing, or pass model_path=None."
                )
            artifact = self._wandb.Artifact(f"model-{run.id}", type="model")
            if path.is_dir():
                artifact.add_dir(str(path))
            else:
                artifact.add_file(str(path))
            run.log_artifact(artifact)
        self._finish(0)

    def close(self) -> None:
        """Finish the run if `finish` was not called (marked failed; a resume continues it).

        The run record then says the run stopped (an error, a stop for a non-finite loss, an
        interruption): a resume that finds rows past its checkpoint cannot count on logging
        the same values there (it may run with other settings), so it starts a new run with
        the rows up to the checkpoint (W&B cannot rewrite a row). After a kill, which leaves
        no such word, the resumed run logs the same values exactly and continues the run."""
        if self.run is not None:
            record = {**self._record, "stopped": True}
            atomic_write_bytes(self._run_file, json.dumps(record, indent=2).encode())
            self._finish(1)

    def _finish(self, exit_code: int) -> None:
        """`run.finish`, then wait until W&B has written the run's file (it does so after)."""
        run, self.run = self.run, None
        path = Path(getattr(run.settings, "sync_file", "") or "")
        run.finish(exit_code=exit_code)
        if self.mode != "disabled" and path.name:
            wait_for_exit_record(path, self.finish_timeout)

    def _open(self) -> Any:
        if self.run is None:
            raise RuntimeError("WandbLogger is not started: the learner calls `start(run)` first.")
        return self.run


def _new_id() -> str:
    """A W&B-style run id: 8 random lowercase letters and digits."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


def _saved(run_file: Path, run: RunInfo) -> dict[str, Any] | None:
    """The run record (`wandb-run.json`: `id`, and `line` for a branch's run); None (said)
    if unreadable."""
    try:
        record = json.loads(run_file.read_text(encoding="utf-8"))
        return {
            "id": str(record["id"]),
            "line": record.get("line"),
            "stopped": bool(record.get("stopped")),
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        run.warning(f"WandbLogger: no run to resume in {run_file}; starting a new W&B run.")
        return None


def _stored_rows(wandb_dir: Path, run_id: str, run: RunInfo) -> tuple[list[dict[str, Any]], int]:
    """The history rows of run `run_id` (every offline session's file) up to `run.resume`,
    and how many rows it holds past it. A branch copies the first into its new run (W&B's
    `fork_from` needs its server); a resume that finds rows past its checkpoint does too,
    since W&B cannot rewrite a row the resumed run logs again."""
    assert run.resume is not None
    rows, past = [], 0
    for path in sorted(wandb_dir.glob(f"*run-*-{run_id}/run-{run_id}.wandb")):
        for row in read_wandb_history(path):
            row = {k: v for k, v in row.items() if not k.startswith("_")}
            if STEP_KEY in row:
                keep = run.resume.keeps_step(int(row[STEP_KEY]))
            elif EPOCH_KEY in row:
                splits = {key.partition("/")[0] for key in row if "/" in key}
                keep = all(run.resume.keeps_epoch(s, int(row[EPOCH_KEY])) for s in splits)
            else:
                continue
            if keep:
                rows.append(row)
            else:
                past += 1
    return rows, past

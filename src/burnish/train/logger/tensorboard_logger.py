"""TensorBoard event files through `torch.utils.tensorboard` (extra `burnish[tensorboard]`)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from burnish.io import fsync_dir
from burnish.train.logger.tracker import (
    ITERATION_GROUP,
    ExperimentLogger,
    ResumePosition,
    RunInfo,
    check_position,
    import_extra,
    scalars,
)
from burnish.train.split import TRAINING_SPLITS, Split, check_split

__all__ = ["TensorBoardLogger"]

HISTORY_FILE = "events.out.tfevents.0000000000.burnish-history"  # sorts before any new file
_REWRITE_TMP = "burnish-rewrite.tmp"  # no "tfevents" in these names: TensorBoard skips them
_REWRITE_READY = "burnish-rewrite.ready"


class TensorBoardLogger(ExperimentLogger):
    """Write a run's metrics as TensorBoard scalars: `tensorboard --logdir <log_dir>`.

    - Epoch values: `<split>/<Metric>` (e.g. `valid/Loss`) at step = epoch; the learning rate
      as `train/lr`.
    - Iteration values (training only): `iteration/train/<Metric>` at step = global training
      step (iterations since the run began).
    - Hyper-parameters (the flattened config and the learner's settings) in the HPARAMS tab;
      the summary table as the text `summary`.

    A fresh run removes the event files an earlier run left directly in `log_dir`. A resumed
    run rewrites them without the points logged after its resume point (one history file,
    committed through a rename, so a failure mid-way loses nothing), then appends: each point
    is in the files exactly once, whatever reads them. (The writer's `purge_step` is not used:
    it hides points by one step number for all tags, but epoch and iteration scalars have
    different step axes, and TensorBoard's fast data server ignores it.)

    Args:
        log_dir: The run's event directory; None: `<artifact_dir>/tensorboard`.
        iterations: Also write the iteration scalars (False: epoch values only).
        flush_secs: How often the writer flushes to disk on its own (`flush()` also does).

    Raises:
        ImportError: if the `tensorboard` package is not installed.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike | None = None,
        iterations: bool = True,
        flush_secs: int = 30,
    ) -> None:
        self._tb = import_extra(
            "torch.utils.tensorboard", "tensorboard", "tensorboard", "TensorBoardLogger"
        )
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.iterations = bool(iterations)
        self.flush_secs = int(flush_secs)
        self._writer: Any = None
        self._params: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"TensorBoardLogger(log_dir={str(self.log_dir) if self.log_dir else None!r})"

    def start(self, run: RunInfo) -> None:
        """Open a writer in `log_dir` after clearing (fresh) or cutting (resume) its files."""
        self.close()
        directory = self.log_dir or Path(run.artifact_dir) / "tensorboard"
        self.log_dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        if run.resume is None:
            _finish_rewrite(directory, keep_ready=False)
            for path in _event_files(directory):
                path.unlink()
        else:
            _rewrite(directory, run.resume)
        self._writer = self._tb.SummaryWriter(log_dir=str(directory), flush_secs=self.flush_secs)
        self._params = {k: v for k, v in run.params().items() if v is not None}
        if self._params:
            from torch.utils.tensorboard.summary import hparams

            _, start, _ = hparams(self._params, {})
            self._writer._get_file_writer().add_summary(start)

    def log_iteration(
        self,
        split: str,
        epoch: int,
        iteration: int,
        step: int,
        values: Mapping[str, float],
        lr: float | None = None,
    ) -> None:
        """Write `iteration/train/<Metric>` scalars at `step` (validation iterations: skipped)."""
        split = check_split(split)
        check_position(epoch, iteration, step)
        if not self.iterations or split != Split.TRAIN:
            return
        writer = self._open()
        for name, value in scalars(values, lr).items():
            writer.add_scalar(f"{ITERATION_GROUP}/{split}/{name}", value, step)

    def log_epoch(
        self, split: str, epoch: int, values: Mapping[str, float], lr: float | None = None
    ) -> None:
        """Write `<split>/<Metric>` scalars at step = `epoch` (and `<split>/lr`)."""
        split = check_split(split)
        check_position(epoch)
        writer = self._open()
        for name, value in scalars(values, lr).items():
            writer.add_scalar(f"{split}/{name}", value, epoch)

    def flush(self) -> None:
        """Write pending events to the event file."""
        if self._writer is not None:
            self._writer.flush()

    def finish(
        self, summary: str | None = None, model_path: str | os.PathLike | None = None
    ) -> None:
        """Add the summary as the text `summary` and mark the hparams session finished."""
        writer = self._open()
        if summary:
            block = "\n".join("    " + line for line in str(summary).splitlines())
            writer.add_text("summary", block)
        if self._params:
            from torch.utils.tensorboard.summary import hparams

            _, _, end = hparams(self._params, {})
            writer._get_file_writer().add_summary(end)
        writer.flush()

    def close(self) -> None:
        """Flush and close the writer (safe to call twice)."""
        if self._writer is not None:
            try:
                self._writer.close()
            finally:
                self._writer = None

    def _open(self) -> Any:
        if self._writer is None:
            raise RuntimeError(
                "TensorBoardLogger is not started: the learner calls `start(run)` first."
            )
        return self._writer


def _event_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if "tfevents" in p.name and p.is_file())


def _keeps(tag: str, step: int, resume: ResumePosition) -> bool:
    """Whether the scalar `tag` at `step` was logged before the resume point."""
    parts = tag.split("/")
    if parts[0] == ITERATION_GROUP and len(parts) >= 3:
        return parts[1] == Split.TRAIN and resume.keeps_step(step)
    if parts[0] in TRAINING_SPLITS and len(parts) >= 2:
        return resume.keeps_epoch(parts[0], step)
    return False  # hparams and the summary text: written again by the resumed run


def _rewrite(directory: Path, resume: ResumePosition) -> None:
    """Replace the event files of `directory` by one file of the scalars `resume` keeps.

    A journal makes it atomic: the kept events go to a temp file, which is fsynced and renamed
    to `burnish-rewrite.ready`; only then are the old files removed and the ready file renamed
    to the history file. A crash before the first rename leaves the old files; after it, the
    next start completes the rewrite (`_finish_rewrite`) before reading anything.
    """
    from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    _finish_rewrite(directory, keep_ready=True)
    files = _event_files(directory)
    tmp = directory / _REWRITE_TMP
    with open(tmp, "wb") as file:
        writer = RecordWriter(file)
        header = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        writer.write(header.SerializeToString())
        for path in files:
            for record in RawEventFileLoader(str(path)).Load():
                event = event_pb2.Event.FromString(record)
                if not event.HasField("summary"):
                    continue
                kept = [v for v in event.summary.value if _keeps(v.tag, event.step, resume)]
                if not kept:
                    continue
                if len(kept) != len(event.summary.value):
                    del event.summary.value[:]
                    event.summary.value.extend(kept)
                writer.write(event.SerializeToString())
        file.flush()
        os.fsync(file.fileno())
    os.replace(tmp, directory / _REWRITE_READY)
    fsync_dir(directory)
    _finish_rewrite(directory, keep_ready=True)


def _finish_rewrite(directory: Path, keep_ready: bool) -> None:
    """Complete (or, for a fresh start, discard) a rewrite a crash interrupted."""
    (directory / _REWRITE_TMP).unlink(missing_ok=True)
    ready = directory / _REWRITE_READY
    if not ready.exists():
        return
    if not keep_ready:
        ready.unlink()
        return
    for path in _event_files(directory):
        path.unlink()
    os.replace(ready, directory / HISTORY_FILE)
    fsync_dir(directory)

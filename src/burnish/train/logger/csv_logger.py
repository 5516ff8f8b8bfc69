"""Every metric of a run in one tidy CSV table (`epoch,iteration,split,metric,value`)."""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from burnish.io import atomic_open
from burnish.train.logger.tracker import (
    ExperimentLogger,
    ResumePosition,
    RunInfo,
    check_position,
    scalars,
)
from burnish.train.split import check_split

__all__ = ["CSV_COLUMNS", "CsvLogger"]

CSV_COLUMNS = ("epoch", "iteration", "split", "metric", "value")


class CsvLogger(ExperimentLogger):
    """Write a run's metrics as one long table, readable by `pandas.read_csv(path)` as is.

    One row per metric value: `epoch,iteration,split,metric,value`. Epoch values have an empty
    `iteration` (NaN in pandas); the rows of the iterations the learner reports have its
    number. The learning rate is the metric `lr` of the train split.

    Example:
        >>> df = pandas.read_csv("artifacts/metrics.csv")  # doctest: +SKIP
        >>> df[df.iteration.isna() & (df.split == "valid")].pivot(
        ...     index="epoch", columns="metric", values="value")  # doctest: +SKIP

    A fresh run replaces the file. A resumed run first drops the rows logged after its resume
    point (rewriting the file atomically: a failure mid-way leaves the previous file intact),
    so the table has each point exactly once. Rows are written through a buffer, flushed at the
    end of each epoch and fsynced by `flush()` (before each checkpoint).

    Args:
        path: The CSV file; None: `<artifact_dir>/metrics.csv`. Relative paths are relative
            to the working directory.
        iterations: Also write the iteration rows (False: epoch values only).
    """

    def __init__(self, path: str | os.PathLike | None = None, iterations: bool = True) -> None:
        self.path = Path(path) if path is not None else None
        self.iterations = bool(iterations)
        self._file: IO[str] | None = None
        self._writer: Any = None

    def __repr__(self) -> str:
        return f"CsvLogger(path={str(self.path) if self.path else None!r})"

    def start(self, run: RunInfo) -> None:
        """Open the table: a new one, or (resuming) the previous one cut at the resume point.

        Raises:
            ValueError: if the existing file is not a table this logger wrote.
        """
        self.close()
        path = self.path if self.path is not None else Path(run.artifact_dir) / "metrics.csv"
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if run.resume is None or not path.exists():
            with atomic_open(path) as file:
                file.write((",".join(CSV_COLUMNS) + "\n").encode())
        else:
            _cut(path, run.resume)
        self._file = open(path, "a", encoding="utf-8", newline="")  # noqa: SIM115
        self._writer = csv.writer(self._file, lineterminator="\n")

    def log_iteration(
        self,
        split: str,
        epoch: int,
        iteration: int,
        step: int,
        values: Mapping[str, float],
        lr: float | None = None,
    ) -> None:
        """Write one row per value (and the lr) of this iteration."""
        split = check_split(split)
        check_position(epoch, iteration, step)
        if self.iterations:
            self._rows(split, epoch, iteration, scalars(values, lr))

    def log_epoch(
        self, split: str, epoch: int, values: Mapping[str, float], lr: float | None = None
    ) -> None:
        """Write one row per epoch value (and the lr) of `split`; flush the file."""
        split = check_split(split)
        check_position(epoch)
        self._rows(split, epoch, "", scalars(values, lr))
        self._open().flush()

    def flush(self) -> None:
        """Write buffered rows and fsync the file."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flush and close the file (safe to call twice)."""
        if self._file is not None:
            try:
                self._file.flush()
            finally:
                self._file.close()
                self._file = None
                self._writer = None

    def _open(self) -> IO[str]:
        if self._file is None:
            raise RuntimeError("CsvLogger is not started: the learner calls `start(run)` first.")
        return self._file

    def _rows(self, split: str, epoch: int, iteration: int | str, values: dict[str, float]) -> None:
        self._open()
        self._writer.writerows((epoch, iteration, split, n, v) for n, v in values.items())


def _cut(path: Path, resume: ResumePosition) -> None:
    """Rewrite `path` without the rows after `resume` (atomically)."""
    text = path.read_text(encoding="utf-8")
    if not text.endswith("\n"):  # a row cut short by a crash
        text = text[: text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, None)
    if header is None:
        header = list(CSV_COLUMNS)
    if tuple(header) != CSV_COLUMNS:
        raise ValueError(
            f"{path} is not a table written by CsvLogger: its header is {header}, expected "
            f"{list(CSV_COLUMNS)}. Give CsvLogger another path, or move that file away."
        )
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for number, row in enumerate(reader, start=2):
        if len(row) != len(CSV_COLUMNS):
            raise ValueError(
                f"Line {number} of {path} has {len(row)} fields, expected {len(CSV_COLUMNS)}: "
                f"{row!r}. Repair or remove the file before resuming."
            )
        epoch, iteration, split = int(row[0]), row[1], row[2]
        if iteration == "":
            keep = resume.keeps_epoch(split, epoch)
        else:
            keep = resume.keeps_iteration(split, epoch, int(iteration))
        if keep:
            writer.writerow(row)
    with atomic_open(path) as file:
        file.write(out.getvalue().encode("utf-8"))

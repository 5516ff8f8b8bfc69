"""Metric logs on disk in Burn's layout: `<directory>/epoch-N/<Metric>.log`, a line an iteration,
and `<directory>/epoch-N/aggregates.json`, the epoch's values (see epoch_aggregates.py)."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from burnish.errors import CheckpointError
from burnish.io import atomic_write_bytes, remove_temporaries
from burnish.train.logger.base import (
    LoggedEntry,
    LoggerPositions,
    MetricLogger,
    check_epoch,
    check_positions,
    metric_file_stem,
    positions_epoch,
    serialize_entry,
)
from burnish.train.logger.epoch_aggregates import (
    AGGREGATES_FILE,
    MetricAggregate,
    read_aggregates,
    write_aggregates,
)
from burnish.train.logger.numeric_lines import count_lines, line_offset, read_chunks, read_final
from burnish.train.metric.base import NumericEntry

__all__ = ["EPOCH_PREFIX", "NAMES_FILE", "FileMetricLogger"]

EPOCH_PREFIX = "epoch-"
NAMES_FILE = "metric-names.json"
"""`{file stem: metric name}` beside the `epoch-N` directories, for the names a file name
changes (`Learning_Rate` -> `Learning Rate`): what `metric_names()` reads them back as."""


class FileMetricLogger(MetricLogger):
    """Write each metric of each epoch to `<directory>/epoch-N/<Metric>.log` (Burn's layout).

    Lines are kept in memory and written `max_buffered_lines` at a time; nothing is flushed per
    iteration. One file handle is open per metric of the current epoch; `end_epoch` closes them.
    A metric's first write in an epoch replaces a file left there by an earlier run (as Burn
    does); `truncate_to` instead keeps the lines a resumed run already logged.

    Example:
        >>> logger = FileMetricLogger("artifacts/train")
        >>> logger.log("Loss", 1, [NumericEntry(0.5, 32), NumericEntry(0.25, 32)])
        >>> logger.end_epoch(1)
        >>> [entry.value for entry in logger.read_numeric("Loss", 1)]
        [0.5, 0.25]

    Args:
        directory: The split's log directory, e.g. `<artifact_dir>/train`.
        max_buffered_lines: Lines a metric keeps in memory before they are written (>= 1).

    Raises:
        ValueError: if `max_buffered_lines` < 1.
    """

    def __init__(self, directory: str | os.PathLike, max_buffered_lines: int = 1024) -> None:
        size = max_buffered_lines
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"`max_buffered_lines` must be an int >= 1. Received: {size!r}.")
        self.directory = Path(directory)
        self.max_buffered_lines = max_buffered_lines
        self._epoch: int | None = None  # the epoch whose files are open
        self._files: dict[str, IO[str]] = {}
        self._pending: dict[str, list[str]] = {}
        self._counts: dict[str, int] = {}  # lines of each metric in the current epoch
        self._opened: set[tuple[int, str]] = set()  # (epoch, name) already written by this logger
        self._names: dict[str, str] = {}  # file stem -> metric name, to catch collisions
        self._stored: set[tuple[str, str]] = set()  # (stem, name) in metric-names.json
        self._eval = False  # Burn's evaluation layout: no `epoch-N` directory

    @classmethod
    def new_eval(cls, directory: str | os.PathLike) -> FileMetricLogger:
        """A logger in Burn's evaluation layout (`FileMetricLogger::new_eval`): the files of
        its one epoch are `<directory>/<Metric>.log` and `<directory>/aggregates.json`, with no
        `epoch-N` directory (the `Evaluator` writes `<artifact_dir>/test/<name>/` so).

        Example:
            >>> logger = FileMetricLogger.new_eval("artifacts/test/mnist-test")
            >>> logger.file_path("Accuracy", 1).as_posix()
            'artifacts/test/mnist-test/Accuracy.log'
        """
        logger = cls(directory)
        logger._eval = True
        return logger

    def for_split(self, split: str) -> FileMetricLogger:
        """A logger of `<directory>/<split>`: Burn main's `FileMetricLogger::new(artifact_dir)`
        given to `with_metric_logger` writes `<artifact_dir>/train/epoch-N/<Metric>.log`."""
        return FileMetricLogger(
            self.directory / str(getattr(split, "value", split)), self.max_buffered_lines
        )

    # ---------------------------------------------------------------- paths
    def epoch_directory(self, epoch: int) -> Path:
        """`<directory>/epoch-<epoch>` (`<directory>` itself in the evaluation layout)."""
        check_epoch(epoch)
        return self.directory if self._eval else self.directory / f"{EPOCH_PREFIX}{epoch}"

    def file_path(self, name: str, epoch: int) -> Path:
        """`<directory>/epoch-<epoch>/<sanitised name>.log`."""
        return self.epoch_directory(epoch) / f"{metric_file_stem(name)}.log"

    def aggregates_path(self, epoch: int) -> Path:
        """`<directory>/epoch-<epoch>/aggregates.json`."""
        return self.epoch_directory(epoch) / AGGREGATES_FILE

    def epochs(self) -> int:
        """The highest `N` among the `epoch-N` directories (0 if there are none)."""
        return max(self._epoch_dirs(), default=0)

    def metric_names(self) -> list[str]:
        """The name of every metric logged in any epoch, sorted.

        A metric whose file name differs from its name (`Learning_Rate.log`) is listed by the
        name it was logged under (`Learning Rate`), kept in `metric-names.json`; logs written
        without that file (by Burn, or an older burnish) are listed by their file stems.
        """
        stems = {
            path.stem
            for epoch in self._epoch_dirs()
            for path in self.epoch_directory(epoch).glob("*.log")
        }
        names = self._stored_names()
        return sorted(names.get(stem, stem) for stem in stems)

    def _stored_names(self) -> dict[str, str]:
        try:
            names = json.loads((self.directory / NAMES_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing, unreadable or cut short: file stems serve
            return {}
        if not isinstance(names, dict):
            return {}
        return {
            stem: name
            for stem, name in names.items()
            if isinstance(name, str) and _stem_or_none(name) == stem
        }

    def _store_name(self, stem: str, name: str) -> None:
        """Keep `name` for `stem` in `metric-names.json` (once per metric and logger)."""
        names = self._stored_names()
        if names.get(stem) != name:
            names[stem] = name
            text = json.dumps(dict(sorted(names.items())), indent=2, ensure_ascii=False)
            atomic_write_bytes(self.directory / NAMES_FILE, (text + "\n").encode("utf-8"))

    def _epoch_dirs(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        if self._eval:  # one epoch, if anything was logged
            return [1] if any(self.directory.glob("*.log")) else []
        epochs = []
        for path in self.directory.iterdir():
            suffix = path.name[len(EPOCH_PREFIX) :]
            epoch = int(suffix) if path.name.startswith(EPOCH_PREFIX) and suffix.isdigit() else 0
            if epoch >= 1 and path.is_dir():  # `epoch-0` is no epoch (they count from 1)
                epochs.append(epoch)
        return epochs

    # ---------------------------------------------------------------- writing
    def log(self, name: str, epoch: int, entries: Sequence[LoggedEntry]) -> None:
        """Buffer one line per entry for metric `name` of `epoch` (a new epoch closes the last)."""
        check_epoch(epoch)
        if epoch != self._epoch:
            self._start_epoch(epoch)
        pending = self._pending.get(name)
        if pending is None:
            pending = self._open(name, epoch)
        pending.extend(serialize_entry(entry) for entry in entries)
        self._counts[name] += len(entries)
        if len(pending) >= self.max_buffered_lines:
            self._write(name)

    @property
    def current_epoch(self) -> int | None:
        """The epoch being logged (after `end_epoch(n)`: n + 1); None before any log."""
        return self._epoch

    def end_epoch(self, epoch: int) -> None:
        """Write and close every file of `epoch`; the next epoch is `epoch + 1`."""
        check_epoch(epoch)
        self._close_files()
        self._epoch = epoch + 1
        self._counts = {}

    def log_aggregates(self, epoch: int, aggregates: Mapping[str, MetricAggregate]) -> None:
        """End each metric's log of `epoch` with its epoch value, `value,final` (as Burn main
        does), then write `epoch-N/aggregates.json` atomically (nothing if no metric logged a
        line). The learner calls it right after `end_epoch(epoch)`."""
        check_epoch(epoch)
        if epoch == self._epoch:  # still open: its lines go first
            self._close_files()
        for name, aggregate in aggregates.items():
            if aggregate.lines:
                final = NumericEntry(aggregate.value, 0, final=True).serialize()
                with open(self.file_path(name, epoch), "a", encoding="utf-8", newline="\n") as file:
                    file.write(final + "\n")
        if any(aggregate.lines for aggregate in aggregates.values()):
            write_aggregates(self.aggregates_path(epoch), epoch, aggregates)

    def read_aggregates(self, epoch: int) -> dict[str, MetricAggregate] | None:
        """The aggregates in `epoch-N/aggregates.json`; None if there is no such file.

        Raises:
            ValueError: if the file is not an aggregates file.
        """
        return read_aggregates(self.aggregates_path(epoch))

    def flush(self) -> None:
        """Write every buffered line and flush the open files to the operating system."""
        for name, file in self._files.items():
            self._write(name)
            file.flush()

    def close(self) -> None:
        """Write buffered lines and close the open files (logging may continue afterwards)."""
        self._close_files()

    def __enter__(self) -> FileMetricLogger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._close_files()

    def _start_epoch(self, epoch: int) -> None:
        self._close_files()
        if epoch != self._epoch:
            self._counts = {}
        self._epoch = epoch

    def _open(self, name: str, epoch: int) -> list[str]:
        stem = metric_file_stem(name)
        other = self._names.setdefault(stem, name)
        if other != name:
            raise ValueError(
                f"Metrics {other!r} and {name!r} would both be logged to `{stem}.log`. "
                "Give one of them a different `name`."
            )
        path = self.file_path(name, epoch)
        path.parent.mkdir(parents=True, exist_ok=True)
        if stem != name and (stem, name) not in self._stored:
            self._store_name(stem, name)
            self._stored.add((stem, name))
        if (epoch, name) in self._opened:
            self._counts.setdefault(name, count_lines(path))
            mode = "a"
        else:
            self._counts[name] = 0
            mode = "w"
        self._opened.add((epoch, name))
        self._files[name] = open(path, mode, encoding="utf-8", newline="\n")  # noqa: SIM115
        self._pending[name] = []
        return self._pending[name]

    def _write(self, name: str) -> None:
        pending = self._pending[name]
        if pending:
            pending.append("")  # the trailing newline
            self._files[name].write("\n".join(pending))
            pending.clear()

    def _close_files(self) -> None:
        try:
            for name in self._files:
                self._write(name)
        finally:
            for file in self._files.values():
                file.close()
            self._files = {}
            self._pending = {}

    # ---------------------------------------------------------------- reading
    def read_numeric(self, name: str, epoch: int) -> list[NumericEntry]:
        """Every iteration entry of metric `name` in `epoch`, including lines still buffered
        (the epoch's `value,final` line is not one: see `read_final`).

        An unterminated last line (a write cut short by a crash) is ignored.

        Raises:
            ValueError: if a line is not a numeric entry (e.g. `name` is a text metric);
                `DamagedLogError` when numeric lines came before it (a damaged numeric log).
        """
        return [
            NumericEntry(value, count)
            for values, counts in self.read_numeric_chunks(name, epoch)
            for value, count in zip(values.tolist(), counts.tolist())
        ]

    def read_numeric_chunks(self, name: str, epoch: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The entries of `read_numeric(name, epoch)` as `(values, counts)` arrays, a block of
        lines at a time: memory does not grow with the file (see `numeric_lines`).

        Raises:
            ValueError: as `read_numeric`, when the block holding the bad line is read.
        """
        if epoch == self._epoch and name in self._files:
            self._write(name)
            self._files[name].flush()
        return read_chunks(self.file_path(name, epoch))

    def read_final(self, name: str, epoch: int) -> float | None:
        """The value of the `value,final` line ending metric `name`'s log of `epoch` (Burn
        main's epoch value; `read_numeric` leaves that line out); None if there is none.

        Raises:
            ValueError: if the last line ends in `,final` but holds no number.
        """
        check_epoch(epoch)
        if epoch == self._epoch and name in self._files:
            return None  # an open epoch has no final line yet
        return read_final(self.file_path(name, epoch))

    # ---------------------------------------------------------------- resume
    def positions(self, epoch: int | None = None) -> LoggerPositions:
        """Write, flush and fsync buffered lines; return the lines each metric of `epoch` has.

        Store the result with a checkpoint; `truncate_to` brings the files back to it.

        Args:
            epoch: The learner's epoch; None for the logger's current one (see `MetricLogger`).
        """
        epoch, current = positions_epoch(self._epoch, epoch)
        self.flush()
        for file in self._files.values():
            os.fsync(file.fileno())
        return {"epoch": epoch, "lines": dict(self._counts) if current else {}}

    def truncate_to(self, positions: Mapping[str, Any]) -> None:
        """Drop the lines logged after `positions` was taken; later logs append after them.

        Files of that epoch cut to their recorded line counts, metric files of that epoch that
        `positions` does not list, that epoch's aggregates and every later `epoch-N`
        directory's logs and aggregates are removed.

        Raises:
            ValueError: if `positions` is not a `positions()` record.
            CheckpointError: if a file has fewer lines than `positions` says it committed.
        """
        epoch, lines = check_positions(positions)
        self.revision += 1
        self._close_files()
        stems = {metric_file_stem(name): name for name in lines}
        directory = self.epoch_directory(epoch)
        for path in sorted(directory.glob("*.log")):
            if path.stem in stems:
                _truncate_lines(path, lines[stems[path.stem]])
            else:
                path.unlink()
        with contextlib.suppress(FileNotFoundError):  # the epoch is open again
            self.aggregates_path(epoch).unlink()
        remove_temporaries(directory)  # an aggregates write a kill cut short
        for name, count in lines.items():
            path = self.file_path(name, epoch)
            if count > 0 and not path.exists():
                raise CheckpointError(
                    f"The metric log {path} is missing but the checkpoint says it had {count} "
                    "lines. Restore the artifact directory or resume from an epoch checkpoint."
                )
        for later in self._epoch_dirs():
            if later > epoch:
                _remove_logs(self.epoch_directory(later))
        self._epoch = epoch
        self._counts = dict(lines)
        self._opened = {key for key in self._opened if key[0] != epoch}
        self._opened.update((epoch, name) for name in lines)


def _stem_or_none(name: str) -> str | None:
    try:
        return metric_file_stem(name)
    except ValueError:
        return None


def _truncate_lines(path: Path, count: int) -> None:
    """Cut `path` right after its `count`-th newline."""
    offset = line_offset(path, count)
    if offset is None:
        found = count_lines(path)
        raise CheckpointError(
            f"The metric log {path} has {found} complete lines but the checkpoint "
            f"says it had {count}: lines were lost. Restore the artifact directory or resume "
            "from an epoch checkpoint."
        )
    if offset != path.stat().st_size:
        with open(path, "r+b") as file:
            file.truncate(offset)
            file.flush()
            os.fsync(file.fileno())


def _remove_logs(directory: Path) -> None:
    for path in [*directory.glob("*.log"), directory / AGGREGATES_FILE]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    remove_temporaries(directory)
    with contextlib.suppress(OSError):
        directory.rmdir()

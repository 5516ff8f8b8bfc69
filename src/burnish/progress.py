"""Progress bars for long work outside training (downloads, record conversion).

A bar is drawn with rich, only when its stream is a terminal; anywhere else (a pipe, a file, a
CI log) nothing at all is written, so captured output stays what the program printed.

Example:
    >>> with byte_progress(sys.stderr) as progress:
    ...     update = progress.task("Downloading train-images", total=9_912_422)
    ...     for chunk in chunks:
    ...         update(len(chunk))                      # bytes just done
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

__all__ = ["ByteProgress", "Update", "byte_progress", "is_terminal"]

#: `update(advance)` adds `advance` bytes to a task; `update(advance, total=n)` also sets its
#: total (a size learned late, e.g. once a file's chunks are encoded).
Update = Callable[..., None]


def is_terminal(stream: Any) -> bool:
    """Whether `stream` is an interactive terminal (False for pipes, files and closed streams)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ByteProgress:
    """The tasks of one progress display; `task()` returns a no-op when nothing is drawn."""

    def __init__(self, progress: Any | None) -> None:
        self._progress = progress

    @property
    def drawing(self) -> bool:
        """Whether a bar is drawn (the stream is a terminal)."""
        return self._progress is not None

    def task(self, description: str, total: int | None = None) -> Update:
        """Add a bar of `total` bytes (None: unknown yet); returns its `update` function."""
        progress = self._progress
        if progress is None:
            return _ignore
        task_id = progress.add_task(description, total=total)

        def update(advance: int, total: int | None = None) -> None:
            if total is not None:
                progress.update(task_id, total=total)
            progress.advance(task_id, advance)

        return update


@contextlib.contextmanager
def byte_progress(stream: TextIO | None = None, *, enabled: bool = True) -> Iterator[ByteProgress]:
    """A rich progress display of byte counts on `stream` (default stderr), if it is a terminal.

    The bars stay on screen when the block ends; when `stream` is not a terminal (or `enabled`
    is False: work too small to show) the tasks' updates do nothing and nothing is written.
    """
    stream = sys.stderr if stream is None else stream
    if not enabled or not is_terminal(stream):
        yield ByteProgress(None)
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(binary_units=True),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(file=stream)) as progress:
        yield ByteProgress(progress)


def _ignore(advance: int, total: int | None = None) -> None:
    return None

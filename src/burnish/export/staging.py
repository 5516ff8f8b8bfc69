"""Write an export beside its destination, check it there, then move it into place: a failed
export or check leaves the previous file as it was."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from burnish.io import fsync_dir

__all__ = ["staged_file"]


@contextlib.contextmanager
def staged_file(destination: Path) -> Iterator[Path]:
    """A path with `destination`'s name in a fresh hidden directory beside it.

    When the block ends without an exception, every file written in that directory (the file
    itself, and e.g. an ONNX file's external data) is fsynced and renamed over the one of its
    name beside `destination`, `destination` itself last. Either way the directory is removed.

    Raises:
        FileNotFoundError: if `destination`'s directory does not exist.
        IsADirectoryError: if `destination` is a directory.
    """
    directory = destination.parent
    if destination.is_dir():
        raise IsADirectoryError(
            errno.EISDIR, "Cannot export over a directory: pass a file path", str(destination)
        )
    if not directory.is_dir():
        raise FileNotFoundError(
            errno.ENOENT,
            f"Cannot write {destination}: its directory does not exist",
            str(directory),
        )
    stage = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".export", dir=directory))
    try:
        yield stage / destination.name
        written = sorted(stage.iterdir(), key=lambda path: path.name == destination.name)
        for path in written:
            _fsync(path)
        for path in written:
            os.replace(path, directory / path.name)
        fsync_dir(directory)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as file:
        os.fsync(file.fileno())

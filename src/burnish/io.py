"""Atomic file writes: a failure at any point leaves the previous file byte-identical.

A file written here gets the permissions `open(path, "w")` would give it: a new file
`0o666 & ~umask` (the kernel applies the umask, as for any file created with mode 0o666), a
replaced file keeps its mode. (`tempfile.mkstemp` would make every file 0600, unreadable by the
teammates and services a shared machine's umask lets read.)"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_open", "atomic_write_bytes", "fsync_dir", "remove_temporaries"]


def fsync_dir(directory: str | os.PathLike) -> None:
    """Flush a directory entry (a rename or a new file) to disk; a no-op where unsupported."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def remove_temporaries(directory: str | os.PathLike) -> list[Path]:
    """Delete the temp files `atomic_open` left in `directory` when a kill cut a write short.

    Only names of its own pattern (`.<name>.<12 hex digits>.tmp`) are touched.

    Returns:
        The files removed.
    """
    removed = []
    for path in Path(directory).glob(".*.tmp"):
        token = path.name[: -len(".tmp")].rsplit(".", 1)[-1]
        if len(token) == 12 and all(c in "0123456789abcdef" for c in token) and path.is_file():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    return removed


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """Open a temp file beside `path` for binary writing; on success fsync and rename it over.

    On any exception the temp file is removed and `path` is left as it was.
    """
    path = Path(path)
    fd, tmp = _create_beside(path)
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


# O_EXCL and O_NOFOLLOW as `tempfile.mkstemp`: a fresh file, never one someone linked there.
_CREATE = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_NEW_FILE_MODE = 0o666  # reduced by the umask, as `open(path, "w")` does


def _create_beside(path: Path) -> tuple[int, Path]:
    """A new temp file in `path`'s directory, with the mode `open(path, "w")` would give."""
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # a replaced file keeps its mode
    except OSError:
        mode = None
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, _CREATE, _NEW_FILE_MODE)
        except FileExistsError:
            continue
        except FileNotFoundError:  # name the file asked for, not the temp file
            raise FileNotFoundError(
                errno.ENOENT, f"Cannot write {path}: its directory does not exist", str(path.parent)
            ) from None
        if mode is not None and hasattr(os, "fchmod"):
            try:
                os.fchmod(fd, mode)
            except BaseException:
                os.close(fd)
                os.unlink(tmp)
                raise
        return fd, tmp
    raise FileExistsError(f"Could not create a temporary file beside {path}.")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically (temp file, fsync, rename, fsync dir)."""
    with atomic_open(path) as file:
        file.write(data)
    return Path(path)

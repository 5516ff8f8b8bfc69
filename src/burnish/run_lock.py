"""One writer per artifact directory: an exclusive `flock` on `<directory>/.burnish.lock`.

`fit` (and `burnish convert` writing into a run) holds the lock while it writes; a second
writer fails at once with `RunLockedError`, naming the holder written into the lock file (pid,
host, start time, command). The kernel drops a `flock` lock with the last descriptor of its
process, so a run killed with SIGKILL never blocks the next one: `resume()` works at once.

The lock file itself is never deleted: another process may be holding the old file open, and a
new file would let two writers in. Readers (`burnish summary`, `report`, `inspect`) ignore it.

POSIX only (Linux, macOS): where `fcntl` is missing (Windows) nothing is locked and a warning
says so. `flock` over a network file system (NFS, some cluster mounts) may not be coherent
between hosts: the lock protects against a second writer on the same host.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from burnish.errors import RunLockedError

__all__ = ["LOCK_NAME", "RunLock", "RunLockedError", "find_run_directory", "run_lock"]

LOCK_NAME = ".burnish.lock"

log = logging.getLogger("burnish")

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]


class RunLock:
    """The exclusive lock of one artifact directory.

    Args:
        directory: the run's artifact directory (created if missing).

    Example:
        >>> with RunLock(directory):  # doctest: +SKIP
        ...     train()
    """

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_NAME
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock, or fail at once.

        Raises:
            RunLockedError: another process (or another run in this one) holds it.
        """
        if self._fd is not None:
            return
        if fcntl is None:  # pragma: no cover (Windows)
            log.warning("No run lock on this platform: two runs in %s would mix.", self.directory)
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunLockedError(_locked_message(self.directory, holder)) from None
        except BaseException:
            os.close(fd)
            raise
        _write_holder(fd)
        self._fd = fd
        _FORKED.add(fd)

    def release(self) -> None:
        """Let the lock go (nothing if it is not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _FORKED.discard(fd)
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


@contextlib.contextmanager
def run_lock(directory: str | os.PathLike | None) -> Iterator[RunLock | None]:
    """Hold the lock of `directory` for the block (nothing when `directory` is None)."""
    if directory is None:
        yield None
        return
    with RunLock(directory) as lock:
        yield lock


def find_run_directory(path: str | os.PathLike) -> Path | None:
    """The nearest directory at or above `path` that holds a run's lock file, or None."""
    for directory in [Path(path).resolve(), *Path(path).resolve().parents]:
        if (directory / LOCK_NAME).is_file():
            return directory
    return None


class _ForkedDescriptors(set[int]):
    """Lock descriptors a forked child closes at once (data-loader workers): the lock is then
    held only by this process, and dies with it, even if a worker outlives it for a moment.
    Closing (not unlocking) leaves the parent's lock in place."""

    def close_all(self) -> None:
        for fd in self:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.clear()


_FORKED = _ForkedDescriptors()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_FORKED.close_all)


def _write_holder(fd: int) -> None:
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(sys.argv)[:500],
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)


def _read_holder(fd: int) -> dict[str, Any]:
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace")
        holder = json.loads(text)
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def _locked_message(directory: Path, holder: dict[str, Any]) -> str:
    if holder:
        who = (
            f"process {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
            f"started {holder.get('started', '?')} ({holder.get('command', '?')})"
        )
    else:
        who = "another process (it has not written its details yet)"
    return (
        f"The artifact directory {str(directory)!r} is in use by {who}. Two runs writing one "
        "directory would mix their logs and checkpoints. Use another artifact directory, or "
        "wait for that run to end (then `resume()` continues it)."
    )

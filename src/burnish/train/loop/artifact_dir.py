"""Check the artifact directory before a run writes anything in it.

A run writes its logs, metrics and checkpoints in one directory. When that path is a file, is
not writable or sits on a full disk, the run would otherwise fail somewhere in its set-up
(`os.mkdir`'s `FileExistsError`) or, worse, at its first checkpoint. `check_artifact_dir`
creates the directory, writes and removes a small probe file in it, and turns any failure into
one `ArtifactDirError` naming the path and the fix.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import os
from pathlib import Path
from typing import TYPE_CHECKING

from burnish.errors import ArtifactDirError
from burnish.storage.url import check_not_collapsed, is_url

if TYPE_CHECKING:
    from burnish.train.parallel.distributed import DistributedContext

__all__ = ["PROBE_BYTES", "check_artifact_dir", "prepare_artifact_dir"]

PROBE_BYTES = 4096
"""The size of the probe file: one block, so a full disk refuses it."""

_ANOTHER = "or pass another artifact directory"
_PROBE_PREFIX = ".burnish-write-check-"
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def prepare_artifact_dir(directory: str | os.PathLike, context: DistributedContext) -> None:
    """`check_artifact_dir` on rank 0; every rank raises if it fails.

    Raises:
        ArtifactDirError: on every rank, if rank 0 cannot write in `directory`.
    """
    error: ArtifactDirError | None = None
    if context.is_main:
        try:
            check_artifact_dir(directory)
        except ArtifactDirError as raised:
            error = raised
    if context.agree(error is not None):
        raise error or ArtifactDirError(
            f"Rank 0 cannot write in the artifact directory '{directory}' (rank 0's error says "
            "why). Fix it there, or pass another artifact directory."
        )


def check_artifact_dir(directory: str | os.PathLike) -> Path:
    """Create `directory` if needed and prove that a file can be written in it.

    Args:
        directory: the run's artifact directory.

    Returns:
        The directory, absolute.

    Raises:
        ArtifactDirError: if `directory` is a file, cannot be created, is not writable, or
            its disk is full; the message names the path and the fix.
    """
    _check_local(directory)
    path = Path(directory).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise ArtifactDirError(
            f"The artifact directory '{path}' is a file, not a directory. Move or delete that "
            f"file, {_ANOTHER}."
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _error(path, error, "cannot be created") from None
    try:  # a real write, not `os.access`: it sees read-only mounts, quotas and full disks
        _write_probe(path)
    except OSError as error:
        raise _error(path, error, "cannot hold a new file") from None
    return path


def _check_local(directory: str | os.PathLike) -> None:
    """A URL here (an `Evaluator`'s, or a `pathlib.Path` that merged one) is refused."""
    if is_url(directory):
        raise ArtifactDirError(
            f"The artifact directory {str(directory)!r} is a URL: only `LearnerBuilder` and "
            "`SupervisedTraining` write to object storage (docs/object-storage.md). Pass a "
            "local directory."
        )
    try:
        check_not_collapsed(directory)
    except ValueError as error:
        raise ArtifactDirError(str(error)) from None


def _write_probe(path: Path) -> None:
    """Write one block to a file of this process in `path`, sync it, and remove it.

    A process killed mid-probe leaves its file behind: the next probe removes it.
    """
    _remove_stale_probes(path)
    name = path / f"{_PROBE_PREFIX}{os.getpid()}"
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_CLOEXEC, 0o600)
    try:
        os.write(fd, b"\0" * PROBE_BYTES)
        os.fsync(fd)
    finally:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def _remove_stale_probes(path: Path) -> None:
    """Remove the probe files of processes that no longer run (killed while probing)."""
    for stale in path.glob(f"{_PROBE_PREFIX}*"):
        pid = stale.name.removeprefix(_PROBE_PREFIX)
        if pid.isdigit() and not _running(int(pid)):
            with contextlib.suppress(OSError):
                stale.unlink()


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it runs
        return True
    return True


def _error(path: Path, error: OSError, what: str) -> ArtifactDirError:
    reason = error.strerror or str(error)
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return ArtifactDirError(
            f"The disk holding the artifact directory '{path}' is full ({reason}). Free space "
            f"on it, {_ANOTHER} on another disk."
        )
    if error.errno == errno.EROFS:
        return ArtifactDirError(
            f"The artifact directory '{path}' is on a read-only file system ({reason}). "
            f"Remount it read-write, {_ANOTHER} on a writable disk."
        )
    if error.errno in (errno.EACCES, errno.EPERM):
        if not path.is_dir():
            parent = _existing_parent(path)
            return ArtifactDirError(
                f"The artifact directory '{path}' cannot be created: this process (user "
                f"{_user()}) may not write in '{parent}' ({reason}). Create it with write "
                f"permission for this user, {_ANOTHER}."
            )
        return _not_writable(path, reason)
    if error.errno in (errno.ENOTDIR, errno.EEXIST):
        return ArtifactDirError(
            f"The artifact directory '{path}' {what}: a part of its path is a file, not a "
            f"directory ({reason}). Move that file, {_ANOTHER}."
        )
    return ArtifactDirError(
        f"The artifact directory '{path}' {what}: [Errno {error.errno}] {reason}. Make it "
        f"writable, {_ANOTHER}."
    )


def _not_writable(path: Path, reason: str) -> ArtifactDirError:
    user = _user()
    return ArtifactDirError(
        f"The artifact directory '{path}' is not writable by this process (user {user}): "
        f"{reason}. Give it write permission (`chmod u+w '{path}'`, as its owner), {_ANOTHER}."
    )


def _existing_parent(path: Path) -> Path:
    for parent in path.parents:
        if parent.exists():
            return parent
    return Path(path.anchor)


def _user() -> str:
    try:
        return getpass.getuser()
    except (ImportError, KeyError, OSError):  # a uid without a name
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"

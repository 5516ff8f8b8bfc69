"""Checkpoints as directories committed atomically (Burn's `FileCheckpointer`, made crash-safe).

A checkpoint is a directory `<checkpoint_dir>/epoch-N` (end of epoch N) or
`<checkpoint_dir>/epoch-N-iteration-K` (mid-epoch), holding one record file per part
(`model`, `optim`, `scheduler`, `learner`) and a `COMMIT` file listing each file's sha256.
It is written as `.tmp-<name>-<pid>/`, every file fsynced, `COMMIT` written last, then the
directory is renamed into place and its parent fsynced. A directory without a valid `COMMIT`
was never committed: `clean_incomplete` removes it and it is never loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.errors import CheckpointError
from burnish.io import atomic_write_bytes, fsync_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    import torch

    from burnish.record.base import FileRecorder

__all__ = ["CheckpointId", "FileCheckpointer", "committed_checkpoints"]

_NAME = re.compile(r"^epoch-(\d+)(?:-iteration-(\d+))?$")
_COMMIT = "COMMIT"
_FORMAT = "burnish-checkpoint-v1"


@dataclasses.dataclass(frozen=True, order=True)
class CheckpointId:
    """Which point of training a checkpoint holds; `iteration=None` means the epoch's end."""

    epoch: int
    iteration: int | None = None

    @property
    def name(self) -> str:
        """The directory name: `epoch-N` or `epoch-N-iteration-K`."""
        if self.iteration is None:
            return f"epoch-{self.epoch}"
        return f"epoch-{self.epoch}-iteration-{self.iteration}"

    def sort_key(self) -> tuple[int, float]:
        """Training order: an epoch's iterations, then its end."""
        return (self.epoch, float("inf") if self.iteration is None else self.iteration)

    @classmethod
    def parse(cls, name: str) -> CheckpointId | None:
        """The checkpoint a directory `name` holds, None for any other name."""
        match = _NAME.match(name)
        if match is None:
            return None
        iteration = match.group(2)
        return cls(int(match.group(1)), None if iteration is None else int(iteration))


class FileCheckpointer:
    """Saves and loads checkpoints under `directory` with `recorder`.

    It has Burn's `Checkpointer` methods (`save(epoch, record)`, `delete(epoch)`,
    `restore(epoch)`) with an epoch number where a `CheckpointId` is taken; its record is a
    whole checkpoint, a dict of parts (`{"model": ..., "optim": ..., ...}`), each a file.
    """

    def __init__(self, directory: str | os.PathLike, recorder: FileRecorder) -> None:
        self.directory = Path(directory)
        self.recorder = recorder
        self.after_commit: Callable[[], None] | None = None
        """Called once each checkpoint is committed (an artifact directory on object storage
        uploads it there, on the same thread)."""

    def save(self, checkpoint: CheckpointId | int, records: dict[str, Any]) -> Path:
        """Write every record, then commit the checkpoint in one rename."""
        checkpoint = _as_id(checkpoint)
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".tmp-{checkpoint.name}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            files = {}
            for part, record in records.items():
                path = Path(self.recorder.record(record, tmp / part))
                files[path.name] = _sha256(path)
            marker = {"format": _FORMAT, "checkpoint": checkpoint.name, "files": files}
            atomic_write_bytes(tmp / _COMMIT, json.dumps(marker, indent=2).encode())
            fsync_dir(tmp)
            self._move_into_place(tmp, self.directory / checkpoint.name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if self.after_commit is not None:
            self.after_commit()
        return self.directory / checkpoint.name

    def load(
        self, checkpoint: CheckpointId | int, device: torch.device | str | None = None
    ) -> dict[str, Any]:
        """Verify a committed checkpoint's checksums and load its records.

        Raises:
            CheckpointError: if it does not exist, was never committed, or a file is corrupt.
        """
        path = self.directory / _as_id(checkpoint).name
        files = self._verify(path)
        records = {}
        for name in files:
            part = name.split(".", 1)[0]
            records[part] = self.recorder.load(path / name, device)
        return records

    def restore(
        self, epoch: CheckpointId | int, device: torch.device | str | None = None
    ) -> dict[str, Any]:
        """Burn's `Checkpointer::restore`: the records of `epoch`'s checkpoint (`load`)."""
        return self.load(epoch, device)

    def verify(self, checkpoint: CheckpointId) -> None:
        """Raise `CheckpointError` unless the checkpoint is committed and intact."""
        self._verify(self.directory / checkpoint.name)

    def committed(self) -> list[CheckpointId]:
        """Committed checkpoints (not verified), oldest first."""
        return committed_checkpoints(self.directory)

    def delete(self, checkpoint: CheckpointId | int) -> None:
        """Remove a checkpoint: renamed away first, so it never appears half-deleted."""
        checkpoint = _as_id(checkpoint)
        path = self.directory / checkpoint.name
        if not path.exists():
            return
        trash = self.directory / f".trash-{checkpoint.name}-{os.getpid()}"
        os.replace(path, trash)
        fsync_dir(self.directory)
        shutil.rmtree(trash, ignore_errors=True)

    def clean_incomplete(self) -> list[str]:
        """Remove temp, trash and uncommitted directories left by a crash; return their names."""
        removed: list[str] = []
        if not self.directory.is_dir():
            return removed
        for entry in self.directory.iterdir():
            committed = CheckpointId.parse(entry.name) and (entry / _COMMIT).is_file()
            if entry.is_dir() and not committed:
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry.name)
        return removed

    def _verify(self, path: Path) -> dict[str, str]:
        if not path.is_dir():
            raise CheckpointError(f"Checkpoint {str(path)!r} does not exist.")
        try:
            marker = json.loads((path / _COMMIT).read_text())
            files = marker["files"]
            assert marker["format"] == _FORMAT and isinstance(files, dict)
        except (OSError, ValueError, KeyError, TypeError, AssertionError) as error:
            raise CheckpointError(
                f"Checkpoint {str(path)!r} was never committed or its COMMIT file is damaged "
                f"({type(error).__name__}). Resume from an earlier checkpoint."
            ) from None
        for name, expected in files.items():
            try:
                actual = _sha256(path / name)
            except OSError as error:
                raise CheckpointError(f"Checkpoint file {str(path / name)!r}: {error}.") from None
            if actual != expected:
                raise CheckpointError(
                    f"Checkpoint file {str(path / name)!r} is corrupt: sha256 {actual[:12]}… "
                    f"does not match {expected[:12]}… recorded at commit. Resume from an "
                    "earlier checkpoint."
                )
        return files

    def _move_into_place(self, tmp: Path, target: Path) -> None:
        old = None
        if target.exists():  # re-saving the same point (after a resume): swap, then drop
            old = target.with_name(f".trash-{target.name}-{os.getpid()}")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(target, old)
        os.replace(tmp, target)
        fsync_dir(self.directory)
        if old is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(old)


def committed_checkpoints(directory: str | os.PathLike) -> list[CheckpointId]:
    """The committed checkpoints in `directory` (not verified), oldest first; no recorder needed."""
    directory = Path(directory)
    if not directory.is_dir():
        return []
    found = []
    for entry in directory.iterdir():
        checkpoint = CheckpointId.parse(entry.name)
        if checkpoint is not None and (entry / _COMMIT).is_file():
            found.append(checkpoint)
    return sorted(found, key=CheckpointId.sort_key)


def _as_id(checkpoint: CheckpointId | int) -> CheckpointId:
    """An epoch number as its epoch checkpoint; a `CheckpointId` as is."""
    if isinstance(checkpoint, bool) or not isinstance(checkpoint, (int, CheckpointId)):
        raise TypeError(
            "A checkpoint is an epoch number or a CheckpointId. Received: "
            f"{type(checkpoint).__name__} ({checkpoint!r})."
        )
    return CheckpointId(checkpoint) if isinstance(checkpoint, int) else checkpoint


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()

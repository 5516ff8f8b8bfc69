"""Which files of an artifact directory a mirror carries, and how a checkpoint is committed.

A run's directory holds plain files (metric logs, `experiment.log`, `config.json`, tracker
state) and checkpoint directories `checkpoint/epoch-N[-iteration-K]/`, each committed by its
`COMMIT` marker, which lists every other file's sha256 and is written last. A checkpoint
without a readable marker naming files that all exist was never committed: never trusted.

Not carried: the local run lock, the writability probe, temporary files of atomic writes,
checkpoint directories being written (`.tmp-*`) or deleted (`.trash-*`), and the staging's
own pull area.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = [
    "CHECKPOINTS",
    "COMMIT",
    "Identity",
    "Layout",
    "checkpoint_file",
    "checkpoint_order",
    "committed_files",
    "identity",
    "is_carried",
    "scan",
]

Identity = tuple[int, int, int, "bytes | None"]
"""A local file's size, mtime (ns), inode and, for a commit marker, its bytes."""

CHECKPOINTS = "checkpoint"
COMMIT = "COMMIT"
_CHECKPOINT_NAME = re.compile(r"^epoch-(\d+)(?:-iteration-(\d+))?$")
_ATOMIC_TEMP = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")  # burnish.io.atomic_open's temp files
PULL_AREA = ".burnish-pull"
_SKIPPED_NAMES = (".burnish.lock", PULL_AREA)
_SKIPPED_PREFIXES = (".burnish-write-check-",)


def is_carried(name: str) -> bool:
    """Whether the file `name` (relative, POSIX) belongs in the mirror."""
    parts = name.split("/")
    if parts[0] in _SKIPPED_NAMES or parts[-1].startswith(_SKIPPED_PREFIXES):
        return False
    if any(_ATOMIC_TEMP.match(part) for part in parts):
        return False
    if parts[0] == CHECKPOINTS and len(parts) > 1:
        return _CHECKPOINT_NAME.match(parts[1]) is not None and len(parts) == 3
    return True


def checkpoint_order(name: str) -> tuple[int, float]:
    """Training order of checkpoint directory names: an epoch's iterations, then its end."""
    match = _CHECKPOINT_NAME.match(name)
    if match is None:
        return (-1, -1.0)
    iteration = match.group(2)
    return (int(match.group(1)), float("inf") if iteration is None else float(iteration))


def committed_files(marker: bytes | None, present: Iterable[str]) -> dict[str, str] | None:
    """The files a `COMMIT` marker lists (name -> sha256), if it is readable and every one of
    them is `present`; None for a checkpoint that must not be trusted."""
    if marker is None:
        return None
    try:
        body = json.loads(marker.decode())
        files = body["files"]
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        return None
    return files if set(files) <= set(present) else None


@dataclasses.dataclass
class Layout:
    """The carried files of a tree, split into plain files and checkpoint directories.

    Attributes:
        plain: relative name -> what identifies its content here (size and mtime locally, a
            size remotely).
        checkpoints: checkpoint directory name -> {file name -> identity}.
    """

    plain: dict[str, object] = dataclasses.field(default_factory=dict)
    checkpoints: dict[str, dict[str, object]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, files: Mapping[str, object]) -> Layout:
        """Sort the carried ones of `files` (relative name -> identity)."""
        layout = cls()
        for name, identity in files.items():
            if not is_carried(name):
                continue
            parts = name.split("/")
            if parts[0] == CHECKPOINTS and len(parts) == 3:
                layout.checkpoints.setdefault(parts[1], {})[parts[2]] = identity
            else:
                layout.plain[name] = identity
        return layout

    def checkpoint_names(self) -> list[str]:
        """The checkpoint directories, oldest first."""
        return sorted(self.checkpoints, key=checkpoint_order)


def checkpoint_file(checkpoint: str, file: str) -> str:
    """The relative name of a checkpoint's file."""
    return f"{CHECKPOINTS}/{checkpoint}/{file}"


def scan(root: Path) -> dict[str, Identity]:
    """The carried files under the local directory `root`: relative name -> what identifies
    its content (size, mtime in ns, inode; for a checkpoint's `COMMIT` marker also its bytes,
    which list every file's sha256). A file removed while scanning is left out."""
    found: dict[str, Identity] = {}
    for directory, folders, files in os.walk(root):
        base = Path(directory).relative_to(root).as_posix()
        prefix = "" if base == "." else base + "/"
        folders[:] = [f for f in folders if is_carried_folder(prefix + f)]
        for file in files:
            name = prefix + file
            if not is_carried(name):
                continue
            found_identity = identity(Path(directory, file), marker=file == COMMIT)
            if found_identity is not None:
                found[name] = found_identity
    return found


def identity(path: Path, marker: bool = False) -> Identity | None:
    """What identifies a local file's content now (see `scan`), None if it is gone."""
    try:
        stat = os.stat(path)
        content = path.read_bytes() if marker else None
    except OSError:
        return None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, content)


def is_carried_folder(name: str) -> bool:
    """Whether files under folder `name` may be carried (prunes the scan)."""
    parts = name.split("/")
    if parts[0] in _SKIPPED_NAMES:
        return False
    if parts[0] == CHECKPOINTS and len(parts) >= 2:
        return len(parts) == 2 and _CHECKPOINT_NAME.match(parts[1]) is not None
    return True

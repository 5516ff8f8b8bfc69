"""Make a staging directory what the store holds: the start of a run on any machine.

The store is the run's truth; the staging directory is a cache of it. Pulling downloads every
plain file (logs, `experiment.log`, `config.json`, ...) and every committed checkpoint, and
removes local files the store does not hold (an upload a kill cut short left them newer than
the store, or they belong to nothing). A checkpoint directory in the store without a readable
`COMMIT` marker naming files that are all there was never committed: it is not downloaded (and
the run's first upload deletes it). A local checkpoint whose marker equals the store's is kept
as it is (a restart on the same machine downloads nothing twice); the local resume verifies
every file's sha256 against the marker, as for any run.

Downloads land in `<staging>/.burnish-pull/` and are moved into place, a checkpoint directory
with its marker written last: a kill while pulling leaves no half checkpoint; the next start
pulls again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import time
from pathlib import Path

from burnish.storage.layout import (
    COMMIT,
    PULL_AREA,
    Identity,
    Layout,
    checkpoint_file,
    committed_files,
    is_carried,
    scan,
)
from burnish.storage.store import ObjectStore

__all__ = ["Pulled", "pull"]


@dataclasses.dataclass
class Pulled:
    """What a pull did, and what the store holds afterwards.

    Attributes:
        checkpoints: the committed checkpoints now in the staging directory, oldest first.
        ignored: checkpoint directories of the store not trusted -> why.
        downloaded: files downloaded, and their bytes.
        seconds: how long it took.
        sent: relative name -> local (size, mtime_ns) of each local file equal to the store's.
        remote: every name the store holds (carried or not yet deleted).
    """

    checkpoints: list[str]
    ignored: dict[str, str]
    downloaded: tuple[int, int]
    seconds: float
    sent: dict[str, Identity]
    remote: set[str]

    def describe(self, url: str, staging: Path) -> list[str]:
        """The lines a user is told."""
        files, size = self.downloaded
        where = f"{url} into {staging}"
        if not any(is_carried(name) for name in self.remote):
            lines = [f"{url} holds no run yet: this run starts it (staged in {staging})."]
        else:
            held = ", ".join(self.checkpoints) if self.checkpoints else "none"
            lines = [
                f"Pulled {where}: {files} files ({_size(size)}) in {self.seconds:.1f} s; "
                f"committed checkpoints: {held}."
            ]
        for name, reason in self.ignored.items():
            lines.append(f"Ignoring checkpoint {name} in {url}: {reason}.")
        return lines


def pull(store: ObjectStore, staging: Path, checkpoints: bool = True) -> Pulled:
    """Make `staging` hold what `store` holds (see the module docstring).

    Args:
        store: the run's store.
        staging: the local directory.
        checkpoints: False: leave the checkpoints out (a reader of the logs only).

    Raises:
        StorageError: if the store fails.
    """
    start = time.monotonic()
    listing = store.list()
    remote = Layout.of(listing)
    committed, ignored = _committed(store, remote) if checkpoints else ({}, {})
    staging.mkdir(parents=True, exist_ok=True)
    area = staging / PULL_AREA
    shutil.rmtree(area, ignore_errors=True)
    area.mkdir()
    try:
        local = Layout.of(scan(staging))
        _remove_unknown(staging, local, remote, committed)
        wanted = _wanted(staging, remote, committed)
        store.download((name, area / name) for name in wanted if _ensure_parent(area / name))
        _move_into_place(staging, area, wanted, committed)
    finally:
        shutil.rmtree(area, ignore_errors=True)
    present = scan(staging)
    sent = {name: present[name] for name in listing if name in present}
    return Pulled(
        checkpoints=[name for name in remote.checkpoint_names() if name in committed],
        ignored=ignored,
        downloaded=(len(wanted), sum(int(listing[n]) for n in wanted)),
        seconds=time.monotonic() - start,
        sent=sent,
        remote=set(listing),
    )


def _committed(
    store: ObjectStore, remote: Layout
) -> tuple[dict[str, tuple[bytes, dict[str, str]]], dict[str, str]]:
    """The store's committed checkpoints (name -> marker bytes and files), and the others."""
    committed: dict[str, tuple[bytes, dict[str, str]]] = {}
    ignored: dict[str, str] = {}
    for name in remote.checkpoint_names():
        files = remote.checkpoints[name]
        if COMMIT not in files:
            ignored[name] = "no commit marker (its upload was cut short), never committed"
            continue
        marker = store.read(checkpoint_file(name, COMMIT))
        listed = committed_files(marker, files)
        if marker is None or listed is None:
            ignored[name] = "its commit marker is damaged or names files that are missing"
            continue
        committed[name] = (marker, listed)
    return committed, ignored


def _remove_unknown(
    staging: Path,
    local: Layout,
    remote: Layout,
    committed: dict[str, tuple[bytes, dict[str, str]]],
) -> None:
    """Remove local files and checkpoints the store does not hold (or holds otherwise)."""
    for name in local.plain:
        if name not in remote.plain:
            with contextlib.suppress(FileNotFoundError):
                (staging / name).unlink()
    for name in local.checkpoints:
        if not _same_checkpoint(staging, name, committed.get(name)):
            shutil.rmtree(staging / "checkpoint" / name, ignore_errors=True)


def _same_checkpoint(staging: Path, name: str, remote: tuple[bytes, dict[str, str]] | None) -> bool:
    if remote is None:
        return False
    directory = staging / "checkpoint" / name
    try:
        marker = (directory / COMMIT).read_bytes()
    except OSError:
        return False
    return marker == remote[0] and all((directory / file).is_file() for file in remote[1])


def _wanted(
    staging: Path, remote: Layout, committed: dict[str, tuple[bytes, dict[str, str]]]
) -> list[str]:
    """The names to download: every plain file, and the committed checkpoints not here."""
    wanted = sorted(remote.plain)
    for name in remote.checkpoint_names():
        if name in committed and not _same_checkpoint(staging, name, committed[name]):
            wanted += [checkpoint_file(name, file) for file in sorted(committed[name][1])]
            wanted.append(checkpoint_file(name, COMMIT))
    return wanted


def _move_into_place(
    staging: Path,
    area: Path,
    wanted: list[str],
    committed: dict[str, tuple[bytes, dict[str, str]]],
) -> None:
    """Plain files replaced one by one; each checkpoint directory renamed into place whole
    (its marker was downloaded with it: the directory appears committed or not at all)."""
    checkpoints = set()
    for name in wanted:
        parts = name.split("/")
        if parts[0] == "checkpoint" and parts[1] in committed:
            checkpoints.add(parts[1])
            continue
        target = staging / name
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(area / name, target)
    for name in checkpoints:
        target = staging / "checkpoint" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(area / "checkpoint" / name, target)


def _ensure_parent(path: Path) -> bool:
    path.parent.mkdir(parents=True, exist_ok=True)
    return True


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} GB"

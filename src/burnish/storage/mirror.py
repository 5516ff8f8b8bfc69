"""Upload a staging directory to its store, in an order that a kill at any moment leaves the
store a run can resume from.

One `sync` makes the store hold what the staging directory holds, in four steps:

1. plain files that changed since they were last sent (metric logs, `experiment.log`, ...):
   the lines a checkpoint relies on are in the store before its marker;
2. each committed checkpoint not yet sent, oldest first: a re-saved one's old marker deleted
   first, its files, then (once `fence` confirmed the run still holds the lock) its `COMMIT`
   marker last;
3. checkpoints no longer in the staging directory (deleted by the checkpointing strategy):
   their markers first, then their files, so none is ever seen committed and half deleted;
4. any other object the staging directory no longer holds.

A kill between any two requests leaves every committed checkpoint of the store whole, with
logs that reach at least as far as the newest one; a checkpoint whose marker never arrived is
ignored by the next pull. What was sent is remembered by its local size and mtime: a sync
sends only what changed. Syncs run one at a time (the checkpoint writer's thread, and the end
of the run).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from burnish.storage.errors import LockLostError, StorageError
from burnish.storage.layout import (
    CHECKPOINTS,
    COMMIT,
    Identity,
    Layout,
    checkpoint_file,
    identity,
    is_carried,
    scan,
)
from burnish.storage.store import ObjectStore

__all__ = ["Mirror", "SyncStats"]

log = logging.getLogger("burnish.storage")


@dataclasses.dataclass
class SyncStats:
    """What the syncs of a run did: count, files and bytes uploaded, seconds spent."""

    syncs: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0
    failures: int = 0


class Mirror:
    """Keeps a store equal to a staging directory, one `sync` at a time.

    Args:
        store: where the files go.
        staging: the local directory the run writes.
        sent: what the store holds of the staging directory: name -> local (size, mtime_ns)
            when it was sent (from `pull`).
        remote: every name the store holds.
        fence: called before each commit marker is uploaded; raises if the run no longer
            holds the directory's lock (`ObjectLock.check`).
    """

    def __init__(
        self,
        store: ObjectStore,
        staging: Path,
        sent: dict[str, Identity] | None = None,
        remote: Iterable[str] = (),
        fence: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        self.staging = Path(staging)
        self.fence = fence
        self.stats = SyncStats()
        self._sent: dict[str, Identity] = dict(sent or {})
        self._remote: set[str] = set(remote)
        self._mutex = threading.Lock()
        self._failing = False

    def sync(self, strict: bool = True) -> bool:
        """Make the store hold what the staging directory holds (see the module docstring).

        Args:
            strict: raise a store's failure; otherwise log it (once per streak) and return
                False: the next sync sends what this one could not. A lost lock is always
                raised.

        Raises:
            LockLostError: another run took the directory's lock over.
            StorageError: the store failed (`strict` only).
        """
        with self._mutex:
            start = time.monotonic()
            try:
                self._sync()
            except LockLostError:
                raise
            except StorageError as error:
                self.stats.failures += 1
                if strict:
                    raise
                if not self._failing:
                    log.warning(
                        "Uploading to %s failed; the next checkpoint retries, and the files "
                        "stay in %s meanwhile: %s",
                        self.store.url,
                        self.staging,
                        error,
                    )
                self._failing = True
                return False
            finally:
                self.stats.seconds += time.monotonic() - start
            if self._failing:
                log.warning("Uploading to %s works again.", self.store.url)
            self._failing = False
            self.stats.syncs += 1
            return True

    def _sync(self) -> None:
        local = Layout.of(scan(self.staging))
        committed = {name: files for name, files in local.checkpoints.items() if COMMIT in files}
        self._send(name for name, identity in local.plain.items() if self._changed(name, identity))
        for name in sorted(committed, key=local.checkpoint_names().index):
            self._send_checkpoint(name, committed[name])
        carried = set(local.plain) | {
            checkpoint_file(name, file) for name, files in committed.items() for file in files
        }
        gone = sorted(name for name in self._remote - carried if is_carried(name))
        markers = [name for name in gone if name.startswith(CHECKPOINTS + "/") and _is_marker(name)]
        self._delete(markers)
        self._delete(name for name in gone if name not in markers)

    def _send_checkpoint(self, name: str, files: dict[str, object]) -> None:
        names = {file: checkpoint_file(name, file) for file in files}
        if not any(self._changed(names[file], files[file]) for file in files):
            return
        marker = names[COMMIT]
        resaved = self._changed(marker, files[COMMIT])  # another save under the same name
        if resaved and marker in self._remote:  # untrusted until committed again
            self._delete([marker])
        data = [file for file in files if file != COMMIT]
        self._send(
            names[file] for file in data if resaved or self._changed(names[file], files[file])
        )
        if self.fence is not None:
            self.fence()
        self._send([marker])

    def _changed(self, name: str, identity: object) -> bool:
        return self._sent.get(name) != identity

    def _send(self, names: Iterable[str]) -> None:
        names = list(names)
        if not names:
            return
        identities = {}
        for name in names:  # taken before reading: a file written meanwhile is sent again
            found = identity(self.staging / name, marker=name.endswith("/" + COMMIT))
            if found is not None:  # else removed since the scan: the next sync deletes it
                identities[name] = found
        self.store.upload((self.staging / name, name) for name in identities)
        for name, found in identities.items():
            self._sent[name] = found
            self._remote.add(name)
            self.stats.files += 1
            self.stats.bytes += found[0]

    def _delete(self, names: Iterable[str]) -> None:
        names = list(names)
        if not names:
            return
        self.store.delete(names)
        for name in names:
            self._remote.discard(name)
            self._sent.pop(name, None)


def _is_marker(name: str) -> bool:
    return name.endswith("/" + COMMIT)

"""An artifact directory on object storage (`LearnerBuilder("s3://bucket/run")`).

The run writes a local staging directory exactly as it writes a local artifact directory; this
object mirrors it to the URL. `open` (at the start of `fit`, under the local run lock) checks
the credentials and the bucket, takes the URL's lock (`ObjectLock`) and pulls what the URL
holds (`pull`): on a fresh machine the local resume then finds the checkpoints and logs it
would have found on the machine that wrote them. `sync` (after each checkpoint write, on the
checkpoint writer's thread: the loop does not wait for the network) uploads in commit order
(`Mirror`); `close` (when `fit` ends, however it ends) syncs a last time and releases the lock.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from burnish.storage.download import Pulled, pull
from burnish.storage.lock import ObjectLock, lease_seconds
from burnish.storage.mirror import Mirror, SyncStats
from burnish.storage.store import ObjectStore, filesystem_class
from burnish.storage.url import normalized, protocol_of, staging_dir

__all__ = ["RemoteArtifactDir"]

log = logging.getLogger("burnish.storage")


class RemoteArtifactDir:
    """A run's artifact directory at a URL, written through a local staging directory.

    Args:
        url: any fsspec URL, e.g. `s3://bucket/run`.
        storage_options: fsspec options (`key`, `secret`, `endpoint_url`, ...); default:
            read from the environment by the protocol's library (for S3, boto's `AWS_*`).
        staging: the local directory the run writes; default one per URL under
            `$BURNISH_STAGING` (else `~/.cache/burnish/staging`).
        lease: seconds the URL's lock lives without renewal; default `$BURNISH_LOCK_LEASE`,
            else 30.

    Raises:
        StorageError: if the URL's protocol is unknown or its library is not installed.
        ValueError: if the URL names no bucket, or `lease` is not > 0.
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        staging: str | os.PathLike | None = None,
        lease: float | None = None,
    ) -> None:
        self.url = normalized(url)
        filesystem_class(protocol_of(self.url))  # a missing library fails here, not at fit
        self.storage_options = dict(storage_options or {})
        self.staging = Path(staging).absolute() if staging is not None else staging_dir(self.url)
        self.lease = lease_seconds(lease)
        self.pulled: Pulled | None = None
        self.stats: SyncStats | None = None  # the uploads of the last run, once open
        self._lock: ObjectLock | None = None
        self._mirror: Mirror | None = None

    def __repr__(self) -> str:
        return f"RemoteArtifactDir({self.url!r}, staging={str(self.staging)!r})"

    @property
    def is_open(self) -> bool:
        """Whether a run holds the URL (between `open` and `close`)."""
        return self._mirror is not None

    def open(self, say: Callable[[str], None] | None = None) -> list[str]:
        """Check the store, take its lock and pull it into the staging directory.

        Args:
            say: where lines go while it waits (for another run's lock); default the log.

        Returns:
            The lines to tell the user: what was pulled, which checkpoints were ignored.

        Raises:
            StorageError: the credentials, the bucket or the endpoint fail (before anything
                is written).
            RemoteLockedError: another run holds the URL.
        """
        if self.is_open:
            raise RuntimeError(f"{self.url} is already open in this process.")
        store = ObjectStore(self.url, self.storage_options)
        store.check()
        lock = ObjectLock(store, self.lease, say)
        lock.acquire()
        try:
            self.pulled = pull(store, self.staging)
        except BaseException:
            lock.release()
            raise
        self._lock = lock
        self._mirror = Mirror(
            store, self.staging, self.pulled.sent, self.pulled.remote, fence=lock.check
        )
        self.stats = self._mirror.stats
        return self.pulled.describe(self.url, self.staging)

    def sync(self) -> None:
        """Upload what changed (the checkpoint writer calls it after each write). A store's
        failure is logged and retried at the next sync; a lost lock is raised.

        Raises:
            LockLostError: another run took the URL's lock over.
        """
        mirror = self._mirror
        if mirror is not None:
            mirror.sync(strict=False)

    def close(self) -> None:
        """Upload what is left and release the lock (released even if the upload fails).

        Raises:
            StorageError: if the last upload failed (the files stay in the staging directory;
                `resume()` on this machine uploads them).
        """
        mirror, lock = self._mirror, self._lock
        self._mirror = self._lock = None
        try:
            if mirror is not None:
                mirror.sync(strict=True)
        finally:
            if lock is not None:
                lock.release()

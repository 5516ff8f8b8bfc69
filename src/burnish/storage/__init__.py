"""Artifact directories on object storage: `LearnerBuilder("s3://bucket/run")`.

A run whose artifact directory is a URL (any fsspec protocol) writes a local staging
directory as it writes any artifact directory, and `RemoteArtifactDir` mirrors it to the URL:
checkpoints committed in order (files, then the `COMMIT` marker), logs before the markers that
rely on them, uploads on the checkpoint writer's thread, a lease lock renewed by a heartbeat,
and a pull at the start that lets `resume()` continue on a fresh machine. See
docs/object-storage.md.
"""

from burnish.storage.errors import LockLostError, RemoteLockedError, StorageError
from burnish.storage.lock import ObjectLock
from burnish.storage.mirror import Mirror, SyncStats
from burnish.storage.pull import Pulled, pull
from burnish.storage.remote_dir import RemoteArtifactDir
from burnish.storage.store import ObjectStore
from burnish.storage.url import check_not_collapsed, is_url, staging_dir

__all__ = [
    "LockLostError",
    "Mirror",
    "ObjectLock",
    "ObjectStore",
    "Pulled",
    "RemoteArtifactDir",
    "RemoteLockedError",
    "StorageError",
    "SyncStats",
    "check_not_collapsed",
    "is_url",
    "pull",
    "staging_dir",
]

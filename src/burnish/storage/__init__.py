"""Artifact directories on object storage: `LearnerBuilder("s3://bucket/run")`.

A run whose artifact directory is a URL (any fsspec protocol) writes a local staging
directory as it writes any artifact directory, and `RemoteArtifactDir` mirrors it to the URL:
checkpoints committed in order (files, then the `COMMIT` marker), logs before the markers that
rely on them, uploads on the checkpoint writer's thread, a lease lock renewed by a heartbeat,
and a pull at the start that lets `resume()` continue on a fresh machine. See
docs/object-storage.md.

The names below are imported on first use (`import burnish` reads `burnish.storage.url` only).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from burnish.storage.download import Pulled, pull
    from burnish.storage.errors import LockLostError, RemoteLockedError, StorageError
    from burnish.storage.lock import ObjectLock
    from burnish.storage.mirror import Mirror, SyncStats
    from burnish.storage.remote_dir import RemoteArtifactDir
    from burnish.storage.store import ObjectStore
    from burnish.storage.url import check_not_collapsed, is_url, staging_dir

_LAZY = {
    "LockLostError": "burnish.storage.errors",
    "RemoteLockedError": "burnish.storage.errors",
    "StorageError": "burnish.storage.errors",
    "ObjectLock": "burnish.storage.lock",
    "Mirror": "burnish.storage.mirror",
    "SyncStats": "burnish.storage.mirror",
    "Pulled": "burnish.storage.download",
    "pull": "burnish.storage.download",
    "RemoteArtifactDir": "burnish.storage.remote_dir",
    "ObjectStore": "burnish.storage.store",
    "check_not_collapsed": "burnish.storage.url",
    "is_url": "burnish.storage.url",
    "staging_dir": "burnish.storage.url",
}

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'burnish.storage' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)

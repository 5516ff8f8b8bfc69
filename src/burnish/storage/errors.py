"""The errors of an artifact directory on object storage."""

from __future__ import annotations

from burnish.errors import ArtifactDirError, RunLockedError

__all__ = ["LockLostError", "RemoteLockedError", "StorageError"]


class StorageError(ArtifactDirError):
    """The object store of an artifact directory cannot be used: the URL's protocol is not
    installed, the credentials are wrong, the bucket is missing, the endpoint does not answer.
    The message names the URL, what failed and the fix."""


class RemoteLockedError(RunLockedError):
    """Another run holds the lock of an artifact directory on object storage."""


class LockLostError(StorageError):
    """This run no longer holds its object-storage lock (another run took it over after the
    lease ran out): it stops uploading, so the two never mix in the bucket."""

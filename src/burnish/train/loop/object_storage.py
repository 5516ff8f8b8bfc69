"""An artifact directory on object storage, held for one run (`LearnerBuilder("s3://...")`).

Opened right after the local run lock of its staging directory, before the experiment log is
installed: the credentials and the bucket are checked (a clear error before anything trains),
the URL's lock is taken and what the URL holds is pulled into the staging directory, so that
the run, and its `resume()`, find what they would find locally. Closed when the run ends,
however it ends: a last upload (logs, `experiment.log`, the deletions of the last checkpoint),
then the URL's lock released. Each checkpoint is uploaded when it commits, on the checkpoint
writer's thread (`FileCheckpointer.after_commit`, wired by settings/resolve.py). Rank 0 opens
it; every rank fails if it cannot. See burnish/storage/.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from burnish.errors import RunLockedError
from burnish.storage.errors import StorageError

if TYPE_CHECKING:
    from burnish.storage import RemoteArtifactDir
    from burnish.train.parallel.distributed import DistributedContext

__all__ = ["held_storage"]

log = logging.getLogger("burnish.train")


@contextlib.contextmanager
def held_storage(context: DistributedContext, storage: RemoteArtifactDir) -> Iterator[None]:
    """Open `storage` on rank 0 for the block, close it after (see the module docstring).

    Raises:
        StorageError: on every rank, if rank 0 cannot use the store (credentials, bucket,
            endpoint); or, on leaving, if the last upload failed.
        RunLockedError: on every rank, if another run holds the URL.
    """
    error: BaseException | None = None
    if context.is_main:
        try:
            storage.open()
        except (StorageError, RunLockedError) as raised:
            error = raised
    if context.agree(error is not None):
        raise error or StorageError(
            f"Rank 0 could not open the artifact directory {storage.url} (rank 0's error says "
            "why). Fix it there, or pass another artifact directory."
        )
    if not context.is_main:
        yield
        return
    try:
        yield
    except BaseException as raised:  # the run's own error goes on; the upload's is noted on it
        try:
            storage.close()
        except Exception as failed:
            log.error("The last upload to %s failed: %s", storage.url, failed)
            add_note = getattr(raised, "add_note", None)
            if add_note is not None:
                add_note(f"The last upload to {storage.url} failed too: {failed}")
        raise
    storage.close()

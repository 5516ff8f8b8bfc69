"""A run or a record file named by URL (`s3://bucket/run`): the commands that read one
(`summary`, `report`, `inspect`) download it to a temporary directory first, and read that.

A run is pulled as a run starting on a fresh machine pulls it (burnish.storage.download): its
logs and files, and, for `report`, its committed checkpoints (never one whose marker is
missing). Credentials and endpoint come from the environment as for training (for S3, boto's
`AWS_*` variables). Nothing is written to the store; its run lock is not taken.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath

from burnish.cli.base import CommandError
from burnish.storage.url import is_url, normalized

__all__ = ["local_file", "local_runs"]


@contextlib.contextmanager
def local_runs(locations: Sequence[str], checkpoints: bool) -> Iterator[list[Path]]:
    """Each location as a local directory for the block: a path as it is, a URL downloaded.

    Args:
        locations: run directories or URLs, as given on the command line.
        checkpoints: download the committed checkpoints too (`report` shows them).

    Raises:
        CommandError: if nothing is stored at a URL (no run there).
        StorageError: if the store cannot be read (credentials, bucket, endpoint).
    """
    from burnish.storage import ObjectStore, pull
    from burnish.storage.layout import is_carried

    with contextlib.ExitStack() as stack:
        directories = []
        for location in locations:
            if not is_url(location):
                directories.append(Path(location))
                continue
            url = normalized(location)
            store = ObjectStore(url)
            store.check()
            directory = _temporary(stack) / (PurePosixPath(url.split("://", 1)[1]).name or "run")
            pulled = pull(store, directory, checkpoints=checkpoints)
            if not any(is_carried(name) for name in pulled.remote):
                there = f" (the bucket '{store.bucket}' exists)" if store.bucket else ""
                raise CommandError(
                    f"No run at {url}: nothing is stored under that path{there}. Check the URL."
                )
            directories.append(directory)
        yield directories


@contextlib.contextmanager
def local_file(location: str) -> Iterator[Path]:
    """A file path as it is, or a URL's object downloaded to a temporary file, for the block.

    Raises:
        CommandError: if the URL names no object.
        StorageError: if the store cannot be read.
    """
    if not is_url(location):
        yield Path(location)
        return
    from burnish.storage import ObjectStore

    url = normalized(location)
    parent, _, name = url.rpartition("/")
    if "://" not in parent or not parent.split("://", 1)[1]:
        raise CommandError(f"{url} names a bucket, not a file. Name a record file in it.")
    store = ObjectStore(parent)
    with contextlib.ExitStack() as stack:
        path = _temporary(stack) / name
        if store.version(name) is None:
            raise CommandError(f"{url} does not exist. Check the URL (a record file's).")
        store.download([(name, path)])
        yield path


def _temporary(stack: contextlib.ExitStack) -> Path:
    return Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="burnish-")))

"""One file at a URL, read or written whole (a config saved beside a run on object storage).

An object store replaces an object whole: a reader sees the old bytes or the new ones, never a
mix. Credentials and endpoint come from the environment (for S3, boto's `AWS_*` variables) or
from `storage_options`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from burnish.storage.store import ObjectStore
from burnish.storage.url import normalized

__all__ = ["read_url", "write_url"]


def write_url(url: str, data: bytes, storage_options: Mapping[str, Any] | None = None) -> str:
    """Write `data` to the object `url`; returns the URL.

    Raises:
        StorageError: naming the URL, what failed and the fix.
    """
    store, name = _split(url, storage_options)
    store.write(name, data)
    return normalized(url)


def read_url(url: str, storage_options: Mapping[str, Any] | None = None) -> bytes:
    """The bytes of the object `url`.

    Raises:
        FileNotFoundError: if it does not exist.
        StorageError: if the store cannot be read (credentials, bucket, endpoint).
    """
    store, name = _split(url, storage_options)
    data = store.read(name)
    if data is None:
        raise FileNotFoundError(f"{normalized(url)} does not exist.")
    return data


def _split(url: str, storage_options: Mapping[str, Any] | None) -> tuple[ObjectStore, str]:
    parent, _, name = normalized(url).rpartition("/")
    if not name or not parent.split("://", 1)[1]:
        raise ValueError(f"{url!r} names no file: give the file's URL, e.g. 's3://bucket/run/x'.")
    return ObjectStore(parent, storage_options), name

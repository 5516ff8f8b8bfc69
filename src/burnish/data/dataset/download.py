"""Find dataset files on disk or download them, verified by the sha256 of their decompressed bytes.

A file `<name>` may be stored as `<name>.gz` or uncompressed; either way its checksum is that of
the decompressed content, so any gzip of the right bytes verifies. Downloads stream into a temp
file beside the cache entry and are renamed into place only once verified: a corrupt, truncated
or interrupted download never lands in the cache. A download shows a progress bar on stderr
when stderr is a terminal, and nothing otherwise.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from burnish.errors import DatasetError
from burnish.io import atomic_open
from burnish.progress import Update, byte_progress

__all__ = ["RemoteFile", "cache_dir", "fetch_file", "mirrors_from_env"]

_CHUNK = 1 << 20
_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class RemoteFile:
    """A dataset file: its name (served as `<name>.gz`) and the sha256 of its decompressed bytes."""

    name: str
    sha256: str


def cache_dir(dataset_name: str) -> Path:
    """The user cache folder of a dataset: `$XDG_CACHE_HOME/burnish/datasets/<name>`.

    `XDG_CACHE_HOME` defaults to `~/.cache`.
    """
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "burnish" / "datasets" / dataset_name


def mirrors_from_env(variable: str, default: Sequence[str]) -> list[str]:
    """The mirror list from `$variable` (URLs separated by commas or spaces), else `default`."""
    value = os.environ.get(variable, "").replace(",", " ").split()
    return value or list(default)


def fetch_file(
    file: RemoteFile, search_dirs: Sequence[Path], cache: Path, mirrors: Sequence[str]
) -> bytes:
    """The verified, decompressed bytes of `file`: from the first folder that has it, else
    downloaded from the first mirror that serves a good copy into `cache`.

    `cache` is searched at its place in `search_dirs`; a bad copy there is deleted and fetched
    again, a bad copy elsewhere is an error (it is the user's file).

    Raises:
        DatasetError: if a copy on disk is corrupt, or no mirror serves a good copy.
    """
    for folder in search_dirs:
        for path in (folder / f"{file.name}.gz", folder / file.name):
            if not path.is_file():
                continue
            try:
                return _read_verified(path, file)
            except DatasetError:
                if folder != cache:
                    raise
                path.unlink(missing_ok=True)  # a bad cache entry: fetch it again
    path = _download(file, cache, mirrors)
    return _read_verified(path, file)


def _read_verified(path: Path, file: RemoteFile) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise DatasetError(
                f"{path} is corrupt or truncated ({error}). Delete it so it is downloaded "
                "again, or point `root=` at a good copy."
            ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != file.sha256:
        raise DatasetError(
            f"{path} is corrupt: the sha256 of its decompressed bytes is {digest}, expected "
            f"{file.sha256}. Delete it so it is downloaded again, or point `root=` at a good copy."
        )
    return data


def _download(file: RemoteFile, cache: Path, mirrors: Sequence[str]) -> Path:
    if not mirrors:
        raise DatasetError(
            f"{file.name} was not found on disk and no download mirror is set. Pass `root=` "
            "pointing at the files, or set mirrors."
        )
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / f"{file.name}.gz"
    failures = []
    for mirror in mirrors:
        url = f"{mirror.rstrip('/')}/{file.name}.gz"
        try:
            with (
                urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response,
                atomic_open(target) as out,
                byte_progress() as progress,
            ):
                update = progress.task(f"Downloading {file.name}", _content_length(response))
                _copy_verified(response, out, file, url, update)
            return target
        except DatasetError as error:
            failures.append(str(error))
        except (OSError, http.client.HTTPException) as error:  # URLError/HTTPError are OSErrors
            failures.append(f"{url}: {error}")
    raise DatasetError(
        f"Could not download {file.name}; every mirror failed:\n  "
        + "\n  ".join(failures)
        + f"\nPlace the file in {cache} (or pass `root=`), or set working mirrors."
    )


def _content_length(response: http.client.HTTPResponse) -> int | None:
    """The size the server announces, if it does (a progress bar's total)."""
    value = response.headers.get("Content-Length", "")
    return int(value) if value.isdigit() else None


def _copy_verified(
    source: BinaryIO, out: BinaryIO, file: RemoteFile, url: str, update: Update
) -> None:
    """Stream gzip bytes from `source` to `out`, checking the sha256 of the decompressed data."""
    hasher = hashlib.sha256()
    decompressor = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
    try:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
            update(len(chunk))
            while chunk:
                hasher.update(decompressor.decompress(chunk))
                chunk = b""
                if decompressor.eof and decompressor.unused_data:  # next gzip member
                    chunk = decompressor.unused_data
                    decompressor = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        hasher.update(decompressor.flush())
    except zlib.error as error:
        raise DatasetError(f"{url}: not a valid gzip file ({error}).") from None
    if not decompressor.eof:
        raise DatasetError(f"{url}: the download is truncated (gzip stream incomplete).")
    digest = hasher.hexdigest()
    if digest != file.sha256:
        raise DatasetError(
            f"{url}: corrupt download, sha256 of the decompressed bytes is {digest}, "
            f"expected {file.sha256}."
        )

"""Artifact directories named by URL (`s3://bucket/run`, any fsspec protocol).

A string `protocol://...` is a URL, except `file://` (a local path). `pathlib.Path` cannot hold
a URL: `Path("s3://bucket/run")` is `s3:/bucket/run`, a relative path whose first folder is
`s3:`; `check_not_collapsed` refuses such a path instead of training into a folder named `s3:`.
A URL's run writes into a local staging directory (`staging_dir`) mirrored to the URL.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["STAGING_ENV", "check_not_collapsed", "is_url", "normalized", "staging_dir"]

STAGING_ENV = "BURNISH_STAGING"
"""The environment variable naming the folder that holds the staging directories."""

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_SCHEME_FOLDER = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+):$")  # "s3:" (not a drive "C:")
_LOCAL = ("file", "local")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def is_url(location: object) -> bool:
    """Whether `location` is a string naming object storage: `protocol://...`, not `file://`."""
    if not isinstance(location, str):
        return False
    match = _URL.match(location)
    return match is not None and match.group(1).lower() not in _LOCAL


def protocol_of(url: str) -> str:
    """The protocol of a URL, lower case (`s3` for `s3://bucket/run`)."""
    match = _URL.match(url)
    if match is None:
        raise ValueError(f"Not a URL: {url!r}. A URL looks like 's3://bucket/run'.")
    return match.group(1).lower()


def normalized(url: str) -> str:
    """The URL without trailing slashes: `s3://bucket/run/` and `s3://bucket/run` are one run."""
    protocol = protocol_of(url)
    rest = url[len(protocol) + 3 :].rstrip("/")
    if not rest:
        raise ValueError(
            f"The URL {url!r} names no bucket or folder. Name one, e.g. '{protocol}://bucket/run'."
        )
    return f"{protocol}://{rest}"


def check_not_collapsed(path: str | os.PathLike) -> None:
    """Refuse a local path that is a URL pathlib merged (`Path("s3://b/run")` is `s3:/b/run`).

    Raises:
        ValueError: naming the URL it was and how to pass it.
    """
    if is_url(path):
        return
    parts = Path(path).parts
    match = _SCHEME_FOLDER.match(parts[0]) if parts else None
    if match is None or len(parts) < 2:
        return
    url = f"{match.group(1)}://{'/'.join(parts[1:])}"
    raise ValueError(
        f"The artifact directory {str(path)!r} looks like the URL {url!r} that pathlib.Path "
        "merged (a Path cannot hold '://'): it would train into a local folder named "
        f"{parts[0]!r}. Pass the URL as a string: LearnerBuilder({url!r})."
    )


def staging_dir(url: str, root: str | os.PathLike | None = None) -> Path:
    """The local directory where a run of `url` writes before uploading: one per URL.

    Args:
        url: the artifact directory's URL.
        root: the folder of staging directories; default `$BURNISH_STAGING`, else
            `$XDG_CACHE_HOME/burnish/staging` (`~/.cache/burnish/staging`).

    Returns:
        `<root>/<the URL's last folders>-<12 hex digits of its sha256>`, absolute. Credentials in
        the URL (`user:password@`) never appear in the name.
    """
    url = normalized(url)
    if root is None:
        root = os.environ.get(STAGING_ENV) or None
    if root is None:
        cache = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
        root = Path(cache).expanduser() / "burnish" / "staging"
    parts = urlsplit(url)
    readable = f"{parts.hostname or ''}{parts.path}"
    slug = _SLUG.sub("-", readable).strip("-.")[-60:].lstrip("-.") or "run"
    digest = hashlib.sha256(url.encode()).hexdigest()[:12]
    return Path(root).expanduser().absolute() / f"{slug}-{digest}"

"""One object store, as an artifact directory uses it: the fsspec filesystem of a URL, with its
errors turned into `StorageError`s that name the URL, what failed and the fix.

Storage options come from the environment as the protocol's library reads them (s3fs: boto's
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, `AWS_ENDPOINT_URL`, ...) or are
passed explicitly (`storage_options={"key": ..., "endpoint_url": ...}`, fsspec's names).

Paths inside the store are relative POSIX paths (`checkpoint/epoch-1/COMMIT`). Conditional
writes (create only if absent, replace only if unchanged) are atomic on S3 (`If-None-Match`,
`If-Match`); elsewhere they are a read then a write, and `atomic` says so.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from burnish.storage.errors import StorageError
from burnish.storage.url import normalized, protocol_of

__all__ = ["ObjectStore"]

log = logging.getLogger("burnish.storage")

T = TypeVar("T")

_ATOMIC = ("s3", "s3a")  # conditional writes: If-None-Match / If-Match
_BUCKETED = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")  # a URL's first folder: its bucket
_EXTRA = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}


class ObjectStore:
    """The objects under one URL.

    Args:
        url: the root, e.g. `s3://bucket/run`.
        storage_options: fsspec options for the protocol (credentials, `endpoint_url`, ...);
            default: the protocol's library reads the environment.

    Raises:
        StorageError: if the protocol is unknown or its library is not installed.
    """

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        self.url = normalized(url)
        self.protocol = protocol_of(self.url)
        self.atomic = self.protocol in _ATOMIC
        filesystem = filesystem_class(self.protocol)
        options = dict(storage_options or {})
        options.setdefault("skip_instance_cache", True)  # its own client: credentials may differ
        try:
            self.fs = filesystem(**options)
        except Exception as error:  # any library's constructor error
            raise StorageError(
                f"Cannot open {self.url}: {type(error).__name__}: {error}. Check the storage "
                "options passed (fsspec's names for this protocol)."
            ) from error
        self.root = self.fs._strip_protocol(self.url).rstrip("/")

    def __repr__(self) -> str:
        return f"ObjectStore({self.url!r})"

    @property
    def bucket(self) -> str | None:
        """The URL's bucket (or container), its first folder; None where the protocol has none."""
        return self.root.lstrip("/").split("/", 1)[0] if self.protocol in _BUCKETED else None

    def path(self, name: str) -> str:
        """The store's full path of `name` (relative, POSIX)."""
        return f"{self.root}/{name}" if name else self.root

    # -- reading ---------------------------------------------------------------------------

    def check(self) -> None:
        """List the root: proves the credentials, the bucket and the endpoint, before a run.

        Raises:
            StorageError: naming the URL, what the store answered and the fix.
        """
        self._call("list", self.url, self._list_root)

    def list(self) -> dict[str, int]:
        """Every object under the root: relative name -> size in bytes."""
        return self._call("list", self.url, self._find)

    def read(self, name: str) -> bytes | None:
        """The bytes of object `name`, None if it does not exist."""
        try:
            return self._call("read", name, lambda: self.fs.cat_file(self.path(name)))
        except StorageError as error:
            if isinstance(error.__cause__, FileNotFoundError):
                return None
            raise

    def version(self, name: str) -> str | None:
        """What identifies the current content of `name` (its ETag on S3, else its sha256);
        None if it does not exist. Never cached."""
        if not self.atomic:
            data = self.read(name)
            return None if data is None else hashlib.sha256(data).hexdigest()
        self.fs.invalidate_cache(self.path(name))
        try:
            info = self._call("read", name, lambda: self.fs.info(self.path(name)))
        except StorageError as error:
            if isinstance(error.__cause__, FileNotFoundError):
                return None
            raise
        return str(info.get("ETag") or info.get("etag") or "") or None

    def download(self, pairs: Iterable[tuple[str, Path]]) -> None:
        """Copy objects to local files (`(name, local path)`), concurrently where the store can."""
        pairs = list(pairs)
        if not pairs:
            return
        remote = [self.path(name) for name, _ in pairs]
        local = [str(path) for _, path in pairs]
        self._call("download", pairs[0][0], lambda: self.fs.get(remote, local))

    # -- writing ---------------------------------------------------------------------------

    def upload(self, pairs: Iterable[tuple[Path, str]]) -> None:
        """Copy local files to objects (`(local path, name)`), concurrently where possible."""
        pairs = list(pairs)
        if not pairs:
            return
        local = [str(path) for path, _ in pairs]
        remote = [self.path(name) for _, name in pairs]
        self._call("upload", pairs[0][1], lambda: self.fs.put(local, remote))

    def write(self, name: str, data: bytes) -> None:
        """Write object `name` (replaced whole: readers see the old or the new bytes)."""
        self._call("write", name, lambda: self.fs.pipe_file(self.path(name), data))

    def delete(self, names: Iterable[str]) -> None:
        """Delete objects (missing ones are no error)."""
        paths = [self.path(name) for name in names]
        if not paths:
            return
        with contextlib.suppress(FileNotFoundError):
            self._call("delete", paths[0], lambda: self.fs.rm(paths))

    def create(self, name: str, data: bytes) -> str | None:
        """Write `name` only if it does not exist; its version, or None if it existed."""
        if not self.atomic:
            if self.version(name) is not None:
                return None
            self.write(name, data)
            return hashlib.sha256(data).hexdigest()
        try:
            answer = self._call(
                "create", name, lambda: self.fs.pipe_file(self.path(name), data, mode="create")
            )
        except StorageError as error:
            if isinstance(error.__cause__, FileExistsError):
                return None
            raise
        return _etag(answer) or self.version(name)

    def replace(self, name: str, data: bytes, version: str) -> str | None:
        """Write `name` only if its content is still `version`; the new version, or None if
        it changed or is gone."""
        if not self.atomic:
            if self.version(name) != version:
                return None
            self.write(name, data)
            return hashlib.sha256(data).hexdigest()
        try:
            answer = self._call(
                "replace", name, lambda: self.fs.pipe_file(self.path(name), data, IfMatch=version)
            )
        except StorageError as error:
            if _precondition_failed(error.__cause__) or isinstance(
                error.__cause__, FileNotFoundError
            ):
                return None
            raise
        return _etag(answer) or self.version(name)

    def delete_if(self, name: str, version: str) -> bool:
        """Delete `name` only if its content is still `version`; whether it was deleted."""
        if self.version(name) != version:
            return False
        if self.atomic:
            bucket, key, _ = self.fs.split_path(self.path(name))
            call = self.fs.call_s3
            try:
                self._call(
                    "delete",
                    name,
                    lambda: call("delete_object", Bucket=bucket, Key=key, IfMatch=version),
                )
            except StorageError as error:
                if _precondition_failed(error.__cause__):
                    return False
                raise
            return True
        self.delete([name])
        return True

    # -- helpers ---------------------------------------------------------------------------

    def _list_root(self) -> None:
        self.fs.invalidate_cache()
        try:
            self.fs.ls(self.root, detail=False)
        except FileNotFoundError:
            self._check_bucket()  # the bucket is there: nothing under the URL yet, a new run

    def _check_bucket(self) -> None:
        """Raise if the URL's bucket does not exist (asked of the bucket itself: an error's
        text names the path, and a bucket may be called `my-bucket`)."""
        bucket = self.bucket
        if bucket is None:
            return  # no buckets: a missing folder is a new run's
        try:
            self.fs.info(bucket)
        except FileNotFoundError:
            raise StorageError(
                f"Object storage {self.url} (list) failed: the bucket does not exist "
                f"('{bucket}'). Create it, or fix the URL."
            ) from None

    def _find(self) -> dict[str, int]:
        self.fs.invalidate_cache()
        try:
            found = self.fs.find(self.root, detail=True, withdirs=False)
        except FileNotFoundError:
            return {}
        prefix = self.root + "/"
        return {
            path[len(prefix) :]: int(info.get("size") or 0)
            for path, info in found.items()
            if path.startswith(prefix) and info.get("type", "file") != "directory"
        }

    def _call(self, what: str, name: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except StorageError:
            raise
        except Exception as error:
            raise StorageError(describe(self.url, what, name, error)) from error


def filesystem_class(protocol: str) -> Any:
    """The fsspec filesystem class of `protocol`.

    Raises:
        StorageError: if fsspec, or the protocol's library, is not installed, or the protocol
            is unknown; the message says what to install.
    """
    try:
        import fsspec
    except ImportError:
        raise StorageError(
            f"An artifact directory on '{protocol}://' needs fsspec: install it with "
            f"{_install_hint(protocol)}, or pass a local directory."
        ) from None
    try:
        return fsspec.get_filesystem_class(protocol)
    except ImportError as error:
        raise StorageError(
            f"An artifact directory on '{protocol}://' needs the library fsspec uses for it "
            f"({error}). Install it with {_install_hint(protocol)}, or pass a local directory."
        ) from None
    except ValueError:
        raise StorageError(
            f"fsspec knows no protocol '{protocol}'. Use a URL of a known one, e.g. "
            "'s3://bucket/run', or a local directory."
        ) from None


def describe(url: str, what: str, name: str, error: BaseException) -> str:
    """One message for a failed store operation: the URL, the operation, the cause, the fix."""
    cause = f"{type(error).__name__}: {str(error).strip().rstrip('.')}"
    where = f"{url} ({what} {name})" if name and name != url else f"{url} ({what})"
    text = _without_names(str(error).lower(), url, name)
    if isinstance(error, PermissionError) or any(
        word in text
        for word in ("accessdenied", "access denied", "invalidaccesskeyid", "signaturedoesnotmatch")
    ):
        fix = (
            "The store refused the credentials or their permissions. Check them: "
            "AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE in the environment, or "
            "storage_options={'key': ..., 'secret': ...}; the user needs to list, read, write "
            "and delete objects under the URL."
        )
    elif "credential" in text:
        fix = (
            "No credentials were found. Set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
            "AWS_PROFILE), or pass storage_options={'key': ..., 'secret': ...}."
        )
    elif isinstance(error, FileNotFoundError) and any(
        phrase in str(error).lower() for phrase in ("specified bucket", "bucket does not exist")
    ):
        fix = "The bucket does not exist: create it, or fix the URL."
    elif isinstance(error, FileNotFoundError):
        fix = "Nothing is stored at that path: check the URL (or another process deleted it)."
    elif any(word in text for word in ("connect", "endpoint", "timeout", "timed out")):
        fix = (
            "The endpoint did not answer. Check AWS_ENDPOINT_URL (or storage_options="
            "{'endpoint_url': ...}) and the network."
        )
    else:
        fix = "Check the URL, the credentials and the network."
    return f"Object storage {where} failed: {cause}. {fix}"


def _without_names(text: str, url: str, name: str) -> str:
    """An error's text without the URL's paths: the words that say what went wrong are the
    store's, not the names of the bucket, folders or objects (a folder `timeout-runs` is no
    timeout)."""
    path = url.split("://", 1)[-1].lower()
    bucket = path.lstrip("/").split("/", 1)[0]
    for part in (url.lower(), name.lower(), bucket):
        if part:
            text = re.sub(rf"(?<![\w.-])/?{re.escape(part)}(?:/\S*)?(?![\w.-])", " ", text)
    return text


def _install_hint(protocol: str) -> str:
    extra = _EXTRA.get(protocol)
    if extra == "s3":
        return "`pip install 'burnish[s3]'` (fsspec and s3fs)"
    if extra is not None:
        return f"`pip install fsspec {extra}fs`"
    return "`pip install fsspec` and the library of that protocol"


def _etag(answer: Any) -> str | None:
    if isinstance(answer, Mapping):
        etag = answer.get("ETag") or answer.get("etag")
        return str(etag) if etag else None
    return None


def _precondition_failed(error: BaseException | None) -> bool:
    """Whether a store's error says a conditional write's condition did not hold (HTTP 412)."""
    while error is not None:
        response = getattr(error, "response", None)
        if isinstance(response, Mapping):
            code = str(response.get("Error", {}).get("Code", ""))
            status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in ("PreconditionFailed", "412") or status == 412:
                return True
        text = str(error).lower()
        if "precondition" in text or "pre-condition" in text:
            return True
        error = error.__cause__ or error.__context__
    return False

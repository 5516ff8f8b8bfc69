"""The run lock of an artifact directory on object storage: a lease object renewed by a
heartbeat.

Object stores have no `flock`. The lock is the object `<url>/.burnish.lock`, created only if
absent (S3 `If-None-Match: *`), naming its holder. The holder renews it every third of the
lease (`If-Match` its last version: a renewal never overwrites another run's lock) and deletes
it when the run ends. A run killed with SIGKILL leaves it behind: the next run watches it for
one lease; if no renewal came, the holder is dead and the next run takes it over (`If-Match`
the version it watched, so of two runs racing for a dead lock one wins). No clock is compared
between machines: only "did the object change while I watched".

Before each checkpoint's commit marker is uploaded, `check` renews the lease synchronously: a
run whose lock was taken over (its heartbeat stalled longer than the lease, e.g. a frozen VM)
raises `LockLostError` instead of committing into a directory another run now writes.

On stores without conditional writes (anything but S3), create and renew are a read then a
write: the lock is then advisory, two runs starting within the same moment could both take it
(a warning says so).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from burnish.storage.errors import LockLostError, RemoteLockedError, StorageError
from burnish.storage.store import ObjectStore

__all__ = ["DEFAULT_LEASE", "LEASE_ENV", "LOCK_NAME", "ObjectLock", "lease_seconds"]

LOCK_NAME = ".burnish.lock"
LEASE_ENV = "BURNISH_LOCK_LEASE"
DEFAULT_LEASE = 30.0
"""Seconds without renewal after which a lock is dead (`$BURNISH_LOCK_LEASE` changes it)."""

log = logging.getLogger("burnish.storage")

_ATTEMPTS = 3


def lease_seconds(value: float | None = None) -> float:
    """The lease: `value`, else `$BURNISH_LOCK_LEASE`, else `DEFAULT_LEASE`.

    Raises:
        ValueError: if it is not a number > 0.
    """
    if value is None:
        text = os.environ.get(LEASE_ENV)
        if not text:
            return DEFAULT_LEASE
        try:
            value = float(text)
        except ValueError:
            raise ValueError(
                f"${LEASE_ENV} must be a number of seconds > 0. Received: {text!r}."
            ) from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"The lock's lease must be a number of seconds > 0. Received: {value!r}.")
    return float(value)


class ObjectLock:
    """The lock object of one artifact directory on object storage.

    Args:
        store: the directory's store.
        lease: seconds a lock lives without renewal; default `lease_seconds()`.
        say: where the lines a user should see go (waiting for a lock, taking one over).
    """

    def __init__(
        self,
        store: ObjectStore,
        lease: float | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.lease = lease_seconds(lease)
        self.say = say or log.warning
        self.holder = _holder(self.lease)
        self._version: str | None = None
        self._beats = 0
        self._lost: str | None = None
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    @property
    def held(self) -> bool:
        """Whether this object holds the lock (and has not lost it)."""
        return self._version is not None and self._lost is None

    def acquire(self) -> None:
        """Take the lock, waiting at most one lease for a holder's sign of life.

        Raises:
            RemoteLockedError: another run holds it (its lock was renewed while watched).
            StorageError: the store failed.
        """
        if self._version is not None:
            return
        if not self.store.atomic:
            log.warning(
                "%s:// has no conditional writes: the run lock in %s is advisory (two runs "
                "starting at the same moment could both take it).",
                self.store.protocol,
                self.store.url,
            )
        for _ in range(_ATTEMPTS):
            version = self.store.create(LOCK_NAME, self._body())
            if version is not None:
                self._hold(version)
                return
            version = self.store.version(LOCK_NAME)
            if version is None:
                continue  # released meanwhile
            other = _parse(self.store.read(LOCK_NAME))
            lease = _lease_of(other, self.lease)
            self.say(
                f"The artifact directory {self.store.url} is locked by {_who(other)}. Waiting up "
                f"to {lease:.0f} s for it to renew its lock: a run killed without releasing "
                "it leaves it until then."
            )
            seen = self._watch(version, lease)
            if seen == "alive":
                raise RemoteLockedError(_locked_message(self.store.url, other))
            if seen == "gone":
                continue
            taken = self.store.replace(LOCK_NAME, self._body(), version)
            if taken is not None:
                self.say(
                    f"Took over the lock of {self.store.url} from {_who(other)}: it was not "
                    f"renewed for {lease:.0f} s (that run is no longer running)."
                )
                self._hold(taken)
                return
        raise RemoteLockedError(
            f"The lock of {self.store.url} changed hands {_ATTEMPTS} times while this run "
            "tried to take it: other runs start in that directory. Use another artifact "
            "directory, or start one run at a time."
        )

    def check(self) -> None:
        """Renew the lease now; raise if the lock was lost (called before each commit marker).

        Raises:
            LockLostError: another run took the lock over.
            StorageError: the renewal failed (the store did not answer).
        """
        self._renew(strict=True)

    def release(self) -> None:
        """Stop renewing and delete the lock (if still ours); errors are logged, not raised:
        a lock left behind is taken over after one lease."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        with self._mutex:
            version, self._version = self._version, None
            if version is None or self._lost is not None:
                return
            try:
                self.store.delete_if(LOCK_NAME, version)
            except StorageError as error:
                log.warning(
                    "Could not release the lock of %s (%s); the next run takes it over after "
                    "%.0f s.",
                    self.store.url,
                    error,
                    self.lease,
                )

    def __enter__(self) -> ObjectLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()

    # -- holding ---------------------------------------------------------------------------

    def _hold(self, version: str) -> None:
        self._version, self._lost = version, None
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._heartbeat, name="burnish-lock-heartbeat", daemon=True
        )
        self._thread.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease / 3):
            self._renew(strict=False)

    def _renew(self, strict: bool) -> None:
        with self._mutex:
            if self._lost is not None or self._version is None:
                if strict:
                    raise LockLostError(
                        self._lost or f"This run does not hold the lock of {self.store.url}."
                    )
                return
            self._beats += 1
            try:
                version = self.store.replace(LOCK_NAME, self._body(), self._version)
            except StorageError as error:
                if strict:
                    raise
                if not self._failing:
                    log.warning("Renewing the lock of %s failed: %s", self.store.url, error)
                self._failing = True
                return
            self._failing = False
            if version is not None:
                self._version = version
                return
            try:
                other = _parse(self.store.read(LOCK_NAME))
            except StorageError:
                other = {}
            self._lost = (
                f"This run lost the lock of {self.store.url} to {_who(other)}: its renewals "
                f"stalled for more than the {self.lease:.0f} s lease and that run took it "
                "over. This run stops uploading, so that the two do not mix in the store; its "
                "files stay in its local staging directory."
            )
            log.error("%s", self._lost)
            if strict:
                raise LockLostError(self._lost)

    def _watch(self, version: str, lease: float) -> str:
        """Watch the lock for `lease` seconds: "alive" if it changed, "gone" if it was
        deleted, "stale" if it stayed as it was."""
        deadline = time.monotonic() + lease
        step = min(1.0, lease / 10)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return "stale"
            time.sleep(min(step, left))
            now = self.store.version(LOCK_NAME)
            if now is None:
                return "gone"
            if now != version:
                return "alive"

    def _body(self) -> bytes:
        return json.dumps({**self.holder, "renewals": self._beats}).encode()


def _holder(lease: float) -> dict[str, Any]:
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "command": " ".join(sys.argv)[:500],
        "lease": lease,
        "token": uuid.uuid4().hex,
    }


def _parse(data: bytes | None) -> dict[str, Any]:
    try:
        holder = json.loads((data or b"").decode(errors="replace"))
    except ValueError:
        return {}
    return holder if isinstance(holder, dict) else {}


def _lease_of(holder: dict[str, Any], default: float) -> float:
    value = holder.get("lease")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 3600:
        return float(value)
    return default


def _who(holder: dict[str, Any]) -> str:
    if not holder:
        return "another run (its lock names no holder)"
    return (
        f"process {holder.get('pid', '?')} on host {holder.get('host', '?')}, started "
        f"{holder.get('started', '?')} ({holder.get('command', '?')})"
    )


def _locked_message(url: str, holder: dict[str, Any]) -> str:
    return (
        f"The artifact directory {url} is in use by {_who(holder)}: it renewed its lock while "
        "this run watched. Two runs writing one directory would mix their logs and "
        "checkpoints. Use another artifact directory, or wait for that run to end (then "
        "`resume()` continues it)."
    )

"""The run lock on object storage (S3 conditional writes, moto server): one holder, renewed
by its heartbeat; a dead holder's lock taken over after one lease; a lock taken over from a
stalled holder stops its uploads."""

from __future__ import annotations

import json
import os

import pytest

from burnish.storage import LockLostError, ObjectLock, ObjectStore, RemoteLockedError
from burnish.storage.lock import LOCK_NAME, lease_seconds

LEASE = 1.5  # seconds: short, so that a dead holder is seen dead quickly


def test_a_second_run_is_refused_while_the_holder_renews(bucket):
    store = ObjectStore(f"s3://{bucket}/run")
    said = []
    with ObjectLock(store, LEASE):
        holder = json.loads(store.read(LOCK_NAME))
        assert holder["pid"] == os.getpid() and holder["lease"] == LEASE
        second = ObjectLock(ObjectStore(f"s3://{bucket}/run"), LEASE, say=said.append)
        with pytest.raises(RemoteLockedError, match=rf"in use by process {os.getpid()} on host"):
            second.acquire()
    assert "Waiting up to 2 s" in said[0]
    assert store.read(LOCK_NAME) is None  # released
    with ObjectLock(store, LEASE) as again:  # and taken at once
        assert again.held


def test_a_dead_holders_lock_is_taken_over_after_one_lease(bucket):
    store = ObjectStore(f"s3://{bucket}/run")
    dead = {"pid": 1, "host": "gone-machine", "started": "then", "command": "x", "lease": LEASE}
    store.create(LOCK_NAME, json.dumps(dead).encode())  # as a SIGKILLed run leaves it
    said = []
    lock = ObjectLock(store, LEASE, say=said.append)
    lock.acquire()
    try:
        assert lock.held
        assert json.loads(store.read(LOCK_NAME))["pid"] == os.getpid()
        assert "locked by process 1 on host gone-machine" in said[0]
        assert said[1].startswith("Took over the lock") and "gone-machine" in said[1]
    finally:
        lock.release()


def test_a_holder_whose_lock_was_taken_over_stops_at_its_next_commit(bucket):
    store = ObjectStore(f"s3://{bucket}/run")
    lock = ObjectLock(store, 60)  # no renewal during the test
    lock.acquire()
    try:
        lock.check()  # renews: still ours
        version = store.version(LOCK_NAME)
        other = {"pid": 7, "host": "other-machine", "lease": 60}
        assert store.replace(LOCK_NAME, json.dumps(other).encode(), version)  # taken over
        with pytest.raises(LockLostError, match=r"lost the lock .* to process 7 on host other"):
            lock.check()
        assert not lock.held
    finally:
        lock.release()
    assert json.loads(store.read(LOCK_NAME))["pid"] == 7  # release leaves the new holder's


def test_the_lease_comes_from_the_environment_and_is_checked(monkeypatch):
    monkeypatch.setenv("BURNISH_LOCK_LEASE", "2.5")
    assert lease_seconds() == 2.5
    monkeypatch.setenv("BURNISH_LOCK_LEASE", "soon")
    with pytest.raises(ValueError, match=r"\$BURNISH_LOCK_LEASE must be a number"):
        lease_seconds()
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="lease must be a number of seconds > 0"):
            lease_seconds(bad)

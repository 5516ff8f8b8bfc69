"""`ObjectStore` against a real S3 server (moto on 127.0.0.1, IAM authentication on): reads,
writes, conditional writes, and a clear error for each way a store can fail to open."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.storage import ObjectStore, StorageError
from burnish.storage.store import describe


def test_objects_round_trip_and_conditional_writes_hold(bucket, tmp_path):
    store = ObjectStore(f"s3://{bucket}/run/")
    store.check()  # nothing under the URL yet: a new run
    assert store.url == f"s3://{bucket}/run" and store.atomic
    assert store.list() == {}
    (tmp_path / "a.log").write_bytes(b"1,2\n")
    (tmp_path / "empty").write_bytes(b"")
    store.upload([(tmp_path / "a.log", "train/a.log"), (tmp_path / "empty", "empty")])
    assert store.list() == {"train/a.log": 4, "empty": 0}
    assert store.read("train/a.log") == b"1,2\n" and store.read("missing") is None
    store.download([("train/a.log", tmp_path / "back.log")])
    assert (tmp_path / "back.log").read_bytes() == b"1,2\n"

    first = store.create("lock", b"one")
    assert first is not None and store.create("lock", b"two") is None
    assert store.read("lock") == b"one"
    second = store.replace("lock", b"three", first)
    assert second not in (None, first)
    assert store.replace("lock", b"four", first) is None  # the version moved on
    assert store.read("lock") == b"three"
    assert not store.delete_if("lock", first)
    assert store.delete_if("lock", second)
    assert store.version("lock") is None and store.replace("lock", b"x", second) is None
    store.delete(["train/a.log", "empty", "never-was"])
    assert store.list() == {}


def test_wrong_credentials_say_so_and_how_to_fix_them(bucket):
    store = ObjectStore(f"s3://{bucket}/run", {"key": "AKIAWRONG", "secret": "wrong"})
    with pytest.raises(StorageError, match=r"refused the credentials.*AWS_ACCESS_KEY_ID"):
        store.check()


def test_a_missing_bucket_is_named(s3_env):
    with pytest.raises(StorageError, match=r"s3://no-such-bucket/run.*bucket does not exist"):
        ObjectStore("s3://no-such-bucket/run").check()


def test_an_endpoint_that_does_not_answer_is_named(bucket):
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    store = ObjectStore(f"s3://{bucket}/run", {"endpoint_url": f"http://127.0.0.1:{port}"})
    with pytest.raises(StorageError, match=r"endpoint did not answer.*AWS_ENDPOINT_URL"):
        store.check()


def test_an_unknown_protocol_is_refused_by_name():
    with pytest.raises(StorageError, match="knows no protocol 'nosuchproto'"):
        ObjectStore("nosuchproto://bucket/run")


def test_a_store_without_conditional_writes_still_creates_and_replaces_once():
    store = ObjectStore("memory://burnish-store-test/run")
    assert not store.atomic
    first = store.create("lock", b"a")
    assert first is not None and store.create("lock", b"b") is None
    assert store.replace("lock", b"c", "stale") is None
    assert store.replace("lock", b"c", first) is not None
    store.delete(["lock"])


_WORDS = st.sampled_from(
    ["bucket", "my-bucket", "timeout", "endpoint", "credential", "connect", "access", "denied"]
)
_NAME = st.lists(
    st.one_of(_WORDS, st.text("abcdefghijklmnopqrstuvwxyz0123456789-._", min_size=1)),
    min_size=1,
    max_size=4,
).map("-".join)


@settings(max_examples=200, deadline=None)
@given(_NAME, st.lists(_NAME, max_size=3), _NAME)
def test_names_in_a_url_never_choose_the_fix(bucket, folders, name):
    """The fix comes from what the store said, never from the names of the bucket, folders or
    object (a bucket `my-bucket`, a folder `timeout-runs`), which its errors repeat."""
    url = "/".join([f"s3://{bucket}", *folders])
    path = "/".join([bucket, *folders, name])
    for error in (FileNotFoundError(path), FileNotFoundError(2, "Not Found", path)):
        assert describe(url, "download", name, error).endswith(
            "Nothing is stored at that path: check the URL (or another process deleted it)."
        )
    missing = describe(url, "list", "", FileNotFoundError("The specified bucket does not exist"))
    assert missing.endswith("The bucket does not exist: create it, or fix the URL.")
    refused = describe(url, "list", "", PermissionError(f"{path}: Forbidden"))
    assert "refused the credentials" in refused
    silent = describe(url, "upload", name, OSError(f"Connect timeout on endpoint for {path}"))
    assert "endpoint did not answer" in silent

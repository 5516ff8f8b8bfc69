"""`Mirror` and `pull`: the order of a sync's requests (logs, files, the marker last;
deletions markers first) on a real S3 server, what a pull trusts, and, over random directory
histories on an in-memory store, that a sync cut short at any request leaves only whole
checkpoints for the next pull, and that the next full sync makes the store equal the disk."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.storage import Mirror, ObjectStore, pull
from burnish.storage.layout import scan

_ROOTS = itertools.count()


class Recording(ObjectStore):
    """A store that records each upload and deletion (`("put"|"rm", name)`), and can crash
    (`Crash`) after a budget of objects, part-way through a batch."""

    def __init__(self, url: str, budget: float = float("inf")) -> None:
        super().__init__(url)
        self.calls: list[tuple[str, str]] = []
        self.budget = budget

    def upload(self, pairs):
        pairs = list(pairs)
        done = self._spend(pairs)
        self.calls += [("put", name) for _, name in done]
        super().upload(done)
        if len(done) < len(pairs):
            raise Crash

    def delete(self, names):
        names = list(names)
        done = self._spend(names)
        self.calls += [("rm", name) for name in done]
        super().delete(done)
        if len(done) < len(names):
            raise Crash

    def _spend(self, items):
        take = int(min(len(items), self.budget))
        self.budget -= take
        return items[:take]


class Crash(Exception):
    """The process died here."""


def write_checkpoint(root: Path, name: str, files: dict[str, bytes]) -> None:
    """A committed checkpoint directory as FileCheckpointer leaves it: files, then COMMIT."""
    directory = root / "checkpoint" / name
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    for file, data in files.items():
        (directory / file).write_bytes(data)
    digests = {file: hashlib.sha256(data).hexdigest() for file, data in files.items()}
    marker = {"format": "burnish-checkpoint-v1", "checkpoint": name, "files": digests}
    (directory / "COMMIT").write_text(json.dumps(marker))


def tree(root: Path) -> dict[str, bytes]:
    return {name: (root / name).read_bytes() for name in scan(root)}


def test_a_sync_sends_logs_then_files_then_the_marker_and_deletes_markers_first(bucket, tmp_path):
    store = Recording(f"s3://{bucket}/run")
    staging = tmp_path / "staging"
    (staging / "train" / "epoch-1").mkdir(parents=True)
    (staging / "train" / "epoch-1" / "Loss.log").write_text("0.5,64\n")
    (staging / ".burnish.lock").write_text("")  # never carried
    write_checkpoint(staging, "epoch-1-iteration-3", {"model.mpk": b"m1", "optim.mpk": b"o1"})
    fenced = []
    mirror = Mirror(store, staging, fence=lambda: fenced.append(len(store.calls)))
    assert mirror.sync()
    calls = [name for _, name in store.calls]
    assert calls[0] == "train/epoch-1/Loss.log"
    assert set(calls[1:3]) == {
        "checkpoint/epoch-1-iteration-3/model.mpk",
        "checkpoint/epoch-1-iteration-3/optim.mpk",
    }
    assert calls[3] == "checkpoint/epoch-1-iteration-3/COMMIT" and fenced == [3]

    store.calls.clear()  # the next checkpoint replaces the first; the log grew
    with open(staging / "train" / "epoch-1" / "Loss.log", "a") as log:
        log.write("0.4,64\n")
    write_checkpoint(staging, "epoch-1", {"model.mpk": b"m2", "optim.mpk": b"o2"})
    shutil.rmtree(staging / "checkpoint" / "epoch-1-iteration-3")
    assert mirror.sync()
    calls = store.calls
    assert calls[0] == ("put", "train/epoch-1/Loss.log")
    assert calls[3] == ("put", "checkpoint/epoch-1/COMMIT")
    assert calls[4] == ("rm", "checkpoint/epoch-1-iteration-3/COMMIT")
    assert {name for _, name in calls[5:]} == {
        "checkpoint/epoch-1-iteration-3/model.mpk",
        "checkpoint/epoch-1-iteration-3/optim.mpk",
    }
    store.calls.clear()
    assert mirror.sync() and store.calls == []  # nothing changed: nothing sent
    assert tree(pull(store, tmp_path / "fresh") and tmp_path / "fresh") == tree(staging)


def test_a_pull_trusts_only_committed_checkpoints_and_keeps_equal_ones(bucket, tmp_path):
    store = ObjectStore(f"s3://{bucket}/run")
    source = tmp_path / "source"
    write_checkpoint(source, "epoch-1", {"model.mpk": b"m1"})
    write_checkpoint(source, "epoch-2", {"model.mpk": b"m2"})
    (source / "experiment.log").write_text("a line\n")
    Mirror(store, source).sync()
    store.upload(
        [(source / "checkpoint" / "epoch-1" / "model.mpk", "checkpoint/epoch-3/model.mpk")]
    )
    store.write("checkpoint/epoch-4/model.mpk", b"m4")
    store.write("checkpoint/epoch-4/COMMIT", b"{damaged")
    staging = tmp_path / "staging"
    write_checkpoint(staging, "epoch-2", {"model.mpk": b"m2"})  # as the store has it
    write_checkpoint(staging, "epoch-9", {"model.mpk": b"m9"})  # unknown to the store
    (staging / "stale.log").write_text("newer than the store\n")
    pulled = pull(store, staging)
    assert pulled.checkpoints == ["epoch-1", "epoch-2"]
    assert set(pulled.ignored) == {"epoch-3", "epoch-4"}
    assert "no commit marker" in pulled.ignored["epoch-3"]
    assert pulled.downloaded[0] == 3  # experiment.log and epoch-1's two files; epoch-2 kept
    assert tree(staging) == tree(source)
    lines = pulled.describe(store.url, staging)
    assert lines[0].startswith(f"Pulled {store.url} into {staging}: 3 files")
    assert any(line.startswith("Ignoring checkpoint epoch-3") for line in lines)
    Mirror(store, staging, pulled.sent, pulled.remote).sync()  # the leftovers go
    assert set(store.list()) == set(scan(source))


checkpoint_names = st.sampled_from(["epoch-1", "epoch-1-iteration-2", "epoch-2", "epoch-3"])
states = st.lists(
    st.fixed_dictionaries(
        {
            "logs": st.dictionaries(
                st.sampled_from(["a.log", "train/b.log", "experiment.log"]),
                st.binary(max_size=40),
                max_size=3,
            ),
            "checkpoints": st.dictionaries(
                checkpoint_names,
                st.dictionaries(
                    st.sampled_from(["model.mpk", "optim.mpk", "learner.mpk"]),
                    st.binary(max_size=30),
                    min_size=1,
                    max_size=3,
                ),
                max_size=3,
            ),
        }
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(states, st.integers(0, 40))
def test_a_sync_cut_short_anywhere_leaves_whole_checkpoints_and_the_next_sync_catches_up(
    history, budget
):
    """Each state of the directory is synced; the store dies after `budget` objects. The
    next machine pulls: every checkpoint it trusts verifies (its files are one save's), then
    its first sync makes the store hold exactly what its directory holds."""
    root = Path(tempfile.mkdtemp(prefix="burnish-mirror-"))
    try:
        url = f"memory://burnish-mirror-{next(_ROOTS)}/run"
        staging = root / "staging"
        staging.mkdir()
        mirror = Mirror(Recording(url, budget), staging)
        crashed = False
        for state in history:
            _apply(staging, state)
            try:
                mirror.sync()
            except Crash:
                crashed = True
                break
        fresh = root / "fresh"
        pulled = pull(ObjectStore(url), fresh)
        for name in pulled.checkpoints:
            marker = json.loads((fresh / "checkpoint" / name / "COMMIT").read_text())
            for file, digest in marker["files"].items():
                data = (fresh / "checkpoint" / name / file).read_bytes()
                assert hashlib.sha256(data).hexdigest() == digest, (name, file)
        if not crashed:
            assert tree(fresh) == tree(staging)
        Mirror(ObjectStore(url), fresh, pulled.sent, pulled.remote).sync()
        assert set(ObjectStore(url).list()) == set(scan(fresh))
    finally:
        shutil.rmtree(root)


_CLOCK = itertools.count(10**18, 10**9)  # one second apart, as a run's writes are


def _apply(staging: Path, state: dict) -> None:
    """Make the directory hold `state`: its logs and committed checkpoints, nothing else."""
    for child in staging.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()
    for name, data in state["logs"].items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes(data)
        moment = next(_CLOCK)  # a rewrite of the same size is a later write, not the same
        os.utime(staging / name, ns=(moment, moment))
    for name, files in state["checkpoints"].items():
        write_checkpoint(staging, name, files)

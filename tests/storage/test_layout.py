"""What a mirror carries of an artifact directory, and when a checkpoint counts as committed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from burnish.storage.layout import Layout, checkpoint_order, committed_files, is_carried, scan


@pytest.mark.parametrize(
    ("name", "carried"),
    [
        ("experiment.log", True),
        ("config.json", True),
        ("train/epoch-1/Loss.log", True),
        ("checkpoint/epoch-2/model.mpk", True),
        ("checkpoint/epoch-2-iteration-6/COMMIT", True),
        ("branches/1/checkpoint/epoch-3/model.mpk", True),  # an archive: plain files
        (".burnish.lock", False),  # the local run lock
        (".burnish-write-check-123", False),
        ("checkpoint/.tmp-epoch-3-42/model.mpk", False),  # being written
        ("checkpoint/.trash-epoch-1-42/model.mpk", False),  # being deleted
        ("train/epoch-1/.Loss.log.0123456789ab.tmp", False),  # an atomic write's temp file
        (".burnish-pull/checkpoint/epoch-1/COMMIT", False),
        ("checkpoint/notes.txt", False),
    ],
)
def test_which_files_are_carried(name, carried):
    assert is_carried(name) is carried


def test_a_marker_commits_only_when_readable_and_every_file_it_lists_is_there():
    marker = json.dumps({"format": "x", "files": {"model.mpk": "ab", "optim.mpk": "cd"}}).encode()
    present = ["model.mpk", "optim.mpk", "COMMIT"]
    assert committed_files(marker, present) == {"model.mpk": "ab", "optim.mpk": "cd"}
    assert committed_files(marker, ["model.mpk", "COMMIT"]) is None  # a file never arrived
    assert committed_files(None, present) is None
    assert committed_files(b"{not json", present) is None
    assert committed_files(b'{"files": [1]}', present) is None
    assert committed_files(b"\xff\xfe", present) is None


def test_checkpoints_sort_in_training_order():
    names = ["epoch-2", "epoch-10", "epoch-2-iteration-3", "epoch-1", "epoch-2-iteration-20"]
    ordered = sorted(names, key=checkpoint_order)
    assert ordered == [
        "epoch-1",
        "epoch-2-iteration-3",
        "epoch-2-iteration-20",
        "epoch-2",
        "epoch-10",
    ]


names = st.lists(
    st.sampled_from(
        [
            "train",
            "valid",
            "checkpoint",
            "epoch-1",
            "epoch-2-iteration-3",
            ".tmp-x",
            "a.log",
            "COMMIT",
            "Loss.log",
        ]
    ),
    min_size=1,
    max_size=4,
).map("/".join)


@given(st.dictionaries(names, st.integers(0, 10), max_size=30))
def test_a_layout_sorts_every_carried_file_once(files):
    layout = Layout.of(files)
    sorted_out = dict(layout.plain)
    for checkpoint, inside in layout.checkpoints.items():
        for file, identity in inside.items():
            sorted_out[f"checkpoint/{checkpoint}/{file}"] = identity
    assert sorted_out == {name: size for name, size in files.items() if is_carried(name)}


def test_scan_lists_the_carried_files_of_a_directory(tmp_path):
    (tmp_path / "train" / "epoch-1").mkdir(parents=True)
    (tmp_path / "train" / "epoch-1" / "Loss.log").write_text("1,2\n")
    (tmp_path / "checkpoint" / ".tmp-epoch-1-9").mkdir(parents=True)
    (tmp_path / "checkpoint" / ".tmp-epoch-1-9" / "model.mpk").write_bytes(b"x")
    (tmp_path / "checkpoint" / "epoch-1").mkdir()
    (tmp_path / "checkpoint" / "epoch-1" / "COMMIT").write_text("{}")
    (tmp_path / ".burnish.lock").write_text("")
    (tmp_path / "empty.txt").write_bytes(b"")
    found = scan(tmp_path)
    assert set(found) == {"train/epoch-1/Loss.log", "checkpoint/epoch-1/COMMIT", "empty.txt"}
    assert found["train/epoch-1/Loss.log"][0] == 4 and found["empty.txt"][0] == 0

"""`SqliteDatasetWriter` and `SqliteDatasetStorage` on real files, a killed writer included."""

import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import msgpack
import numpy as np
import pytest

from burnish.data.dataset import (
    SqliteDataset,
    SqliteDatasetError,
    SqliteDatasetStorage,
    SqliteDatasetWriter,
)
from burnish.data.dataset.sqlite.codec import decode_item, encode_item

SRC = str(Path(__file__).resolve().parents[4] / "src")


@dataclass
class Complex:
    """Burn's writer test struct."""

    column_str: str
    column_bytes: bytes
    column_int: int
    column_bool: bool
    column_float: float
    column_complex: list[list[list[tuple[int, int, int]]]]


def _complex(index: int) -> Complex:
    return Complex(f"test_{index}", bytes([index, 2, 3]), index, True, 1.0, [[[(1, index, 3)]]])


def test_write_complete_and_read_back_like_burn(tmp_path):
    storage = SqliteDatasetStorage.from_name("preprocessed").with_base_dir(tmp_path)
    writer = storage.writer(overwrite=True)
    assert writer.overwrite and not writer.db_file.exists()
    assert writer.write("train", _complex(0)) == 0
    assert writer.write("train", _complex(1)) == 1
    assert writer.write("test", _complex(2)) == 0
    assert not writer.db_file.exists() and writer.db_file_tmp.exists()
    writer.set_completed()
    assert writer.db_file == tmp_path / "preprocessed.db" and writer.db_file.exists()
    assert writer.db_file_tmp is None and writer.is_completed
    assert not (tmp_path / "preprocessed.db.tmp").exists()
    with pytest.raises(SqliteDatasetError, match="Cannot save to a completed dataset writer"):
        writer.write("train", _complex(3))
    train = storage.reader("train", item_type=Complex)
    assert len(train) == 2 and train.get(1) == _complex(1)
    assert SqliteDataset(writer.db_file, "test", item_type=Complex).get(0) == _complex(2)


def test_writes_from_many_threads_like_burn(tmp_path):
    writer = SqliteDatasetWriter(tmp_path / "threads.db", overwrite=True)
    splits = ("train", "test")
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(lambda i: writer.write(splits[i % 2], _complex(i)), range(20)))
    writer.set_completed()
    train = SqliteDataset(tmp_path / "threads.db", "train", item_type=Complex)
    test = SqliteDataset(tmp_path / "threads.db", "test", item_type=Complex)
    assert (len(train), len(test)) == (10, 10)
    assert sorted(item.column_int for item in train) == list(range(0, 20, 2))


def test_an_existing_file_is_refused_or_kept_until_completed(tmp_path):
    path = tmp_path / "data.db"
    with SqliteDatasetWriter(path, overwrite=False) as writer:
        writer.write("train", 1)
    with pytest.raises(SqliteDatasetError, match=r"already exists: .*data.db'. Pass overwrite"):
        SqliteDatasetWriter(path, overwrite=False)
    writer = SqliteDatasetWriter(path, overwrite=True)
    writer.write("train", 2)
    writer.write("train", 3)
    assert list(SqliteDataset(path, "train")) == [1]  # the old file, whole, while writing
    writer.set_completed()
    assert list(SqliteDataset(path, "train")) == [2, 3]


def test_an_error_inside_with_discards_the_file(tmp_path):
    path = tmp_path / "data.db"
    with (
        pytest.raises(RuntimeError, match="boom"),
        SqliteDatasetWriter(path, overwrite=True) as writer,
    ):
        writer.write("train", 1)
        raise RuntimeError("boom")
    assert not path.exists() and not (tmp_path / "data.db.tmp").exists()
    with pytest.raises(SqliteDatasetError, match="discarded"):
        writer.write("train", 2)


def test_a_dropped_writer_deletes_its_temporary_file(tmp_path):
    writer = SqliteDatasetWriter(tmp_path / "data.db", overwrite=True)
    writer.write("train", 1)
    tmp = writer.db_file_tmp
    assert tmp.exists()
    del writer
    assert not tmp.exists() and not (tmp_path / "data.db").exists()


KILLED_WRITER = """
import sys
from burnish.data.dataset import SqliteDatasetWriter
writer = SqliteDatasetWriter(sys.argv[1], overwrite=True)
for index in range(1000):
    writer.write("train", {"index": index})
print("written", flush=True)
sys.stdin.readline()  # killed here, before set_completed
"""


def test_a_killed_writer_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "data.db"
    with SqliteDatasetWriter(path, overwrite=False) as writer:
        writer.write("train", {"index": -1})
    before = path.read_bytes()
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    try:
        assert process.stdout.readline() == b"written\n"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    assert list(SqliteDataset(path, "train")) == [{"index": -1}]
    assert (tmp_path / "data.db.tmp").exists()  # the unfinished file, never under the final name
    with SqliteDatasetWriter(path, overwrite=True) as writer:  # removes the stale one
        writer.write("train", {"index": 7})
    assert list(SqliteDataset(path, "train")) == [{"index": 7}]
    assert not (tmp_path / "data.db.tmp").exists()


def test_split_names_are_checked_on_write(tmp_path):
    with SqliteDatasetWriter(tmp_path / "data.db", overwrite=True) as writer:
        with pytest.raises(ValueError, match=r"Received: split='a b'"):
            writer.write("a b", 1)
        with pytest.raises(TypeError, match=r"Cannot serialize the item set"):
            writer.write("train", {1, 2})
        writer.write("train", 1)


# -- MessagePack: Burn's compact struct form, numpy, named maps ----------------------------------


class Point(NamedTuple):
    x: float
    y: int


@dataclass
class Item:
    name: str
    value: int
    point: Point
    image: np.ndarray


def test_items_are_written_as_rmp_serdes_compact_arrays():
    # rmp_serde::to_vec(&Item { name: "HI", value: 1, point: (0.5, 2), image: [[1, 2]] }):
    # fixarray(4) ["HI", 1, fixarray(2) [f64 0.5, 2], [[1, 2]]]
    expected = (
        b"\x94\xa2HI\x01\x92\xcb" + np.float64(0.5).byteswap().tobytes() + b"\x02\x91\x92\x01\x02"
    )
    item = Item("HI", 1, Point(0.5, 2), np.array([[1, 2]], dtype=np.uint8))
    assert encode_item(item) == expected
    decoded = decode_item(expected, Item, "test")
    assert decoded.name == "HI" and decoded.point == Point(0.5, 2)
    assert np.array_equal(decoded.image, [[1, 2]])


def test_a_map_with_extra_keys_is_read_like_serde():
    blob = msgpack.packb({"y": 3, "x": 1.5, "unused": "ignored"})
    assert decode_item(blob, Point, "test") == Point(1.5, 3)
    with pytest.raises(SqliteDatasetError, match=r"missing field\(s\) \['x'\]"):
        decode_item(msgpack.packb({"y": 3}), Point, "test")


def test_storage_paths_and_missing_reader(tmp_path):
    storage = SqliteDatasetStorage.from_name("my/data:set").with_base_dir(tmp_path)
    assert storage.db_file() == tmp_path / "mydataset.db" and not storage.exists()
    with pytest.raises(SqliteDatasetError, match=r"does not exist: .*mydataset.db'"):
        storage.reader("train")
    assert SqliteDatasetStorage.from_file(tmp_path / "x.db").db_file() == tmp_path / "x.db"
    assert SqliteDatasetStorage.from_name("x").db_file().parent == SqliteDatasetStorage.base_dir()
    with pytest.raises(ValueError, match="name must keep some characters"):
        SqliteDatasetStorage.from_name("///")


def test_burns_vec_u8_array_reads_into_a_bytes_field():
    @dataclass
    class Blob:
        data: bytes

    assert decode_item(msgpack.packb([[55, 231, 159]]), Blob, "test") == Blob(b"\x37\xe7\x9f")
    assert encode_item(Blob(b"\x01")) == b"\x91\xc4\x01\x01"  # bin 8

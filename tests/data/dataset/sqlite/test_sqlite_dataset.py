"""`SqliteDataset` on real SQLite files (Burn's `sqlite.rs` tests and more)."""

import os
import pickle
import sqlite3
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import SqliteDataset, SqliteDatasetError, SqliteDatasetWriter


@dataclass
class Sample:
    """Burn's test struct, read from a table with a column per field."""

    column_str: str
    column_bytes: bytes
    column_int: int
    column_bool: bool
    column_float: float


@pytest.fixture
def columns_db(tmp_path):
    """Burn's `tests/data/sqlite-dataset.db`: table `train`, one column per field, 2 rows."""
    path = tmp_path / "sqlite-dataset.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "create table train (row_id integer primary key, column_str text, column_bytes "
            "blob, column_int integer, column_bool boolean, column_float float, extra text)"
        )
        connection.executemany(
            "insert into train values (?, ?, ?, ?, ?, ?, ?)",
            [
                (1, "HI1", bytes([55, 231, 159]), 1, 1, 1.0, "x"),
                (2, "HI2", bytes([66, 159, 199]), 2, 0, 2.0, "y"),
            ],
        )
    connection.close()
    return path


def test_columns_layout_like_burn(columns_db):
    dataset = SqliteDataset.from_db_file(columns_db, "train", item_type=Sample)
    assert len(dataset) == 2 and not dataset.row_serialized
    assert dataset.get(0) == Sample("HI1", bytes([55, 231, 159]), 1, True, 1.0)
    assert dataset.get(1).column_bool is False
    assert dataset.get(10) is None
    assert dataset.split() == "train" and dataset.db_file() == columns_db


def test_get_many_out_of_order_with_duplicates_like_burn(columns_db):
    dataset = SqliteDataset.from_db_file(columns_db, "train", item_type=Sample)
    assert dataset.get_many([1, 0, 1]) == [dataset.get(1), dataset.get(0), dataset.get(1)]
    assert dataset.get_many([]) == []
    with pytest.raises(IndexError, match=r"Index out of bounds for SqliteDataset: index 10"):
        dataset.get_many([0, 10])


def test_without_an_item_type_rows_are_dicts(columns_db):
    row = SqliteDataset(columns_db, "train").get(1)
    assert row == {
        "column_str": "HI2",
        "column_bytes": bytes([66, 159, 199]),
        "column_int": 2,
        "column_bool": 0,
        "column_float": 2.0,
        "extra": "y",
    }


@dataclass
class Pair:
    index: int
    values: np.ndarray


@pytest.fixture(scope="module")
def serialized_db(tmp_path_factory):
    """5,000 items written by `SqliteDatasetWriter` (more than one `get_many` query's chunk)."""
    path = tmp_path_factory.mktemp("sqlite") / "pairs.db"
    with SqliteDatasetWriter(path, overwrite=False) as writer:
        for index in range(5000):
            writer.write("train", Pair(index, np.arange(3) * index))
    return path


def test_get_many_reads_large_requests_in_order(serialized_db):
    dataset = SqliteDataset(serialized_db, "train", item_type=Pair)
    assert dataset.row_serialized and len(dataset) == 5000
    indices = [*range(4999, -1, -1), 7, 7]
    items = dataset.get_many(indices)
    assert [item.index for item in items] == indices
    assert np.array_equal(items[0].values, [0, 4999, 9998])


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_get_many_equals_get(serialized_db, data):
    dataset = SqliteDataset(serialized_db, "train", item_type=Pair)
    indices = data.draw(st.lists(st.integers(0, 4999), max_size=30))
    assert [item.index for item in dataset.get_many(indices)] == indices
    assert [item.index for item in dataset.get_many(indices)] == [
        dataset.get(i).index for i in indices
    ]


class IndexBatcher(Batcher):
    def batch(self, items, device):
        return torch.tensor([item.index for item in items], device=device)


def test_loader_workers_read_the_file_in_their_own_processes(serialized_db):
    dataset = SqliteDataset(serialized_db, "train", item_type=Pair)
    dataset.get(0)  # opens this process's connection before the workers start

    def batches(workers):
        builder = DataLoaderBuilder(IndexBatcher()).batch_size(64).shuffle(3)
        loader = builder.num_workers(workers).build(dataset)
        return torch.cat(list(loader.iter())).tolist()

    in_process = batches(0)
    assert sorted(in_process) == list(range(5000))
    assert batches(2) == in_process


# -- Errors ------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(SqliteDatasetError, match=r"missing.db' not found. Write it with"):
        SqliteDataset(tmp_path / "missing.db", "train")


def test_missing_split_table_lists_the_tables(columns_db):
    with pytest.raises(SqliteDatasetError, match=r"no table 'test'; its tables are \['train'\]"):
        SqliteDataset(columns_db, "test")


def test_sqlites_own_tables_are_not_offered_as_splits(serialized_db):
    # The writer's autoincrement keys make SQLite add its `sqlite_sequence` table.
    with pytest.raises(SqliteDatasetError, match=r"its tables are \['train'\]\. Pass one"):
        SqliteDataset(serialized_db, "valid")


def test_corrupted_database_file(tmp_path):
    path = tmp_path / "corrupt.db"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(
        SqliteDatasetError, match=r"corrupt.db' split 'train'.*not a SQLite database"
    ):
        SqliteDataset(path, "train")


def test_a_truncated_database_file(serialized_db, tmp_path):
    path = tmp_path / "truncated.db"
    path.write_bytes(serialized_db.read_bytes()[:4096])
    with pytest.raises(SqliteDatasetError, match=r"not a SQLite database|no table"):
        dataset = SqliteDataset(path, "train", item_type=Pair)
        dataset.get_many(range(len(dataset)))


def test_split_names_cannot_inject_sql(columns_db):
    with pytest.raises(ValueError, match=r"letters, digits and `_`.*'train; drop table train'"):
        SqliteDataset(columns_db, "train; drop table train")
    assert len(SqliteDataset(columns_db, "train")) == 2


def _serialized_table(path, blobs, row_ids=None):
    with sqlite3.connect(path) as connection:
        connection.execute(
            "create table train (row_id integer primary key autoincrement not null, "
            "item blob not null)"
        )
        for row_id, blob in zip(row_ids or range(1, len(blobs) + 1), blobs, strict=True):
            connection.execute("insert into train values (?, ?)", (row_id, blob))
    connection.close()


def test_corrupted_item_blob(tmp_path):
    _serialized_table(tmp_path / "bad.db", [b"\xc1"])  # 0xc1: never used in MessagePack
    with pytest.raises(SqliteDatasetError, match=r"item 0: the item blob is not valid MessagePack"):
        SqliteDataset(tmp_path / "bad.db", "train").get(0)


class _Exploit:
    def __reduce__(self):
        return (open, (str(EXPLOIT_MARKER), "w"))


EXPLOIT_MARKER = None


def test_a_pickled_item_is_never_unpickled(tmp_path):
    global EXPLOIT_MARKER
    EXPLOIT_MARKER = tmp_path / "pwned"
    _serialized_table(tmp_path / "pickled.db", [pickle.dumps(_Exploit())])
    with pytest.raises(SqliteDatasetError, match="not valid MessagePack"):
        SqliteDataset(tmp_path / "pickled.db", "train", item_type=Pair).get(0)
    assert not EXPLOIT_MARKER.exists()


def test_a_gap_in_row_ids_is_named(tmp_path):
    import msgpack

    _serialized_table(tmp_path / "gap.db", [msgpack.packb(1), msgpack.packb(2)], row_ids=[1, 3])
    dataset = SqliteDataset(tmp_path / "gap.db", "train")
    assert len(dataset) == 3 and dataset.get(2) == 2
    with pytest.raises(SqliteDatasetError, match=r"row\(s\) not found.*without gaps"):
        dataset.get(1)


def test_an_item_of_another_type_is_named(serialized_db):
    with pytest.raises(
        SqliteDatasetError, match=r"item 0 does not fit Sample: Sample has 5 fields"
    ):
        SqliteDataset(serialized_db, "train", item_type=Sample).get(0)

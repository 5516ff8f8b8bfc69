import json
from dataclasses import dataclass

import pytest

from burnish.data.dataset import InMemDataset
from burnish.errors import DatasetError


@dataclass
class Sample:
    column_str: str
    column_int: int
    column_bool: bool
    column_float: float
    column_opt: int | None = None


def write_csv(tmp_path, text):
    path = tmp_path / "data.csv"
    path.write_text(text)
    return path


def test_from_csv_as_dicts(tmp_path):
    path = write_csv(tmp_path, "a,b\n1,x\n2,y\n")
    dataset = InMemDataset.from_csv(path)
    assert list(dataset) == [{"a": "1", "b": "x"}, {"a": "2", "b": "y"}]


def test_from_csv_converts_to_the_item_types_fields(tmp_path):
    path = write_csv(
        tmp_path,
        "column_str,column_int,column_bool,column_float,column_opt\n"
        "HI1,1,true,1.5,\nHI2,-2,False,2e3,7\n",
    )
    dataset = InMemDataset.from_csv(path, item_type=Sample)
    assert dataset.get(0) == Sample("HI1", 1, True, 1.5, None)
    assert dataset.get(1) == Sample("HI2", -2, False, 2000.0, 7)
    assert dataset.get(2) is None


def test_from_csv_with_another_delimiter(tmp_path):
    path = write_csv(tmp_path, "a;b\n1;2\n")
    assert InMemDataset.from_csv(path, delimiter=";").get(0) == {"a": "1", "b": "2"}


def test_from_csv_bad_cell_names_file_line_and_column(tmp_path):
    path = write_csv(
        tmp_path, "column_str,column_int,column_bool,column_float\nok,1,true,1\nbad,x,true,1\n"
    )
    with pytest.raises(DatasetError, match=r"data.csv:3: column 'column_int' must be int.*'x'"):
        InMemDataset.from_csv(path, item_type=Sample)


def test_from_csv_wrong_columns(tmp_path):
    path = write_csv(tmp_path, "nope\n1\n")
    with pytest.raises(DatasetError, match=r"data.csv:2 does not fit Sample"):
        InMemDataset.from_csv(path, item_type=Sample)


def test_from_json_rows(tmp_path):
    rows = [
        {"column_str": "HI1", "column_int": 1, "column_bool": True, "column_float": 1.0},
        {"column_str": "HI2", "column_int": 2, "column_bool": False, "column_float": 2.5},
    ]
    path = tmp_path / "data.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    assert list(InMemDataset.from_json_rows(path)) == rows
    dataset = InMemDataset.from_json_rows(path, item_type=Sample)
    assert dataset.get(1) == Sample("HI2", 2, False, 2.5)
    assert len(dataset) == 2


def test_from_json_rows_invalid_line(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text('{"a": 1}\n{oops\n')
    with pytest.raises(DatasetError, match=r"data.jsonl:2 is not valid JSON"):
        InMemDataset.from_json_rows(path)


def test_from_json_rows_non_object_with_item_type(tmp_path):
    path = tmp_path / "data.jsonl"
    path.write_text("[1, 2]\n")
    with pytest.raises(DatasetError, match=r"holds a list, expected an object"):
        InMemDataset.from_json_rows(path, item_type=Sample)

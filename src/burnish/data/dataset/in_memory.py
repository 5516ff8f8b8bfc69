"""`InMemDataset`: every item held in a Python list (Burn: `InMemDataset`)."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic

from burnish.data.dataset.base import Dataset, I
from burnish.errors import DatasetError

__all__ = ["InMemDataset"]

_TRUE = {"true", "1", "yes"}
_FALSE = {"false", "0", "no"}


class InMemDataset(Dataset[I], Generic[I]):
    """A dataset whose items all live in memory.

    Args:
        items: the items, in order.

    Example:
        >>> dataset = InMemDataset.from_csv("iris.csv", item_type=IrisItem)
        >>> dataset.get(0)
        IrisItem(sepal_length=5.1, ..., species='setosa')
    """

    def __init__(self, items: Iterable[I]) -> None:
        self.items: list[I] = list(items)

    def get(self, index: int) -> I | None:
        """The item at `index`, or `None` if `index` is not in `[0, len(self))`."""
        if 0 <= index < len(self.items):
            return self.items[index]
        return None

    def __len__(self) -> int:
        return len(self.items)

    @classmethod
    def from_dataset(cls, dataset: Dataset[I]) -> InMemDataset[I]:
        """Load every item of `dataset` into memory."""
        return cls(dataset)

    @classmethod
    def from_json_rows(
        cls, path: str | os.PathLike, item_type: Callable[..., I] | None = None
    ) -> InMemDataset[Any]:
        """Load a JSON-lines file: one JSON object per line (blank lines are skipped).

        Args:
            path: the file.
            item_type: builds each item from a row's fields as keyword arguments (a dataclass,
                a `NamedTuple`, ...). `None` keeps each row as a `dict`.

        Raises:
            DatasetError: if a line is not valid JSON or does not fit `item_type`.
        """
        items = []
        with open(path, encoding="utf-8") as file:
            for line_number, line in enumerate(file, start=1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as error:
                    raise DatasetError(
                        f"{os.fspath(path)}:{line_number} is not valid JSON ({error.msg}). "
                        "Each line of a JSON-rows file must hold one JSON object."
                    ) from None
                items.append(_build(row, item_type, path, line_number, convert=False))
        return cls(items)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike,
        item_type: Callable[..., I] | None = None,
        delimiter: str = ",",
    ) -> InMemDataset[Any]:
        """Load a CSV file whose first line names the columns.

        Args:
            path: the file.
            item_type: builds each item from a row's columns as keyword arguments. For a
                dataclass, each string is converted to its field's annotated type (`int`,
                `float`, `bool`, `str`; an empty cell is `None` for an optional field).
                `None` keeps each row as a `dict[str, str]`.
            delimiter: the column separator.

        Raises:
            DatasetError: if a row does not fit `item_type`.
        """
        with open(path, encoding="utf-8", newline="") as file:
            reader = csv.DictReader(file, delimiter=delimiter)
            items = [
                _build(row, item_type, path, line_number, convert=True)
                for line_number, row in enumerate(reader, start=2)
            ]
        return cls(items)


def _build(
    row: Any, item_type: Callable[..., Any] | None, path: Any, line: int, convert: bool
) -> Any:
    """One item from a parsed row: the row itself, or `item_type(**row)`."""
    if item_type is None:
        return row
    where = f"{os.fspath(path)}:{line}"
    if not isinstance(row, Mapping):
        raise DatasetError(
            f"{where} holds a {type(row).__name__}, expected an object of named fields "
            f"to build a {getattr(item_type, '__name__', item_type)}."
        )
    if convert and dataclasses.is_dataclass(item_type):
        row = _convert_fields(row, item_type, where)
    try:
        return item_type(**row)
    except TypeError as error:
        raise DatasetError(
            f"{where} does not fit {getattr(item_type, '__name__', item_type)}: {error}. "
            "Make the file's column names match the item type's fields."
        ) from None


def _convert_fields(row: Mapping[str, str], item_type: type, where: str) -> dict[str, Any]:
    """Convert CSV strings to the annotated types of a dataclass's fields."""
    hints = typing.get_type_hints(item_type)
    converted: dict[str, Any] = {}
    for name, text in row.items():
        target = hints.get(name, str)
        try:
            converted[name] = _convert(text, target)
        except ValueError:
            raise DatasetError(
                f"{where}: column {name!r} must be {getattr(target, '__name__', target)}. "
                f"Received: {text!r}."
            ) from None
    return converted


def _convert(text: str | None, target: Any) -> Any:
    """Convert one CSV cell to `target` (`int`, `float`, `bool`, `str`, `X | None`)."""
    args = typing.get_args(target)
    if type(None) in args:
        if text is None or text == "":
            return None
        target = next(arg for arg in args if arg is not type(None))
    if text is None:
        raise ValueError("missing cell")
    if target is bool:
        lowered = text.strip().lower()
        if lowered not in _TRUE | _FALSE:
            raise ValueError(text)
        return lowered in _TRUE
    if target in (int, float):
        return target(text)
    return text

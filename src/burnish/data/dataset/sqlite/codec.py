"""Items to and from MessagePack, as Burn's `rmp_serde` writes them; never pickle.

A dataclass or `NamedTuple` is written as the array of its field values in declaration order
(`rmp_serde::to_vec`, Burn's compact form, so Burn reads the file into the same struct), a
`dict` as a map, a NumPy array as nested arrays (Burn: `Vec<Vec<...>>`), `bytes` as bin (Burn
reads bin into `serde_bytes::ByteBuf`; for a Rust `Vec<u8>` field write a uint8 NumPy array,
which becomes an array of ints; a `bytes` field reads either form).
Reading builds the item back from `item_type`'s annotations; without one, items come back
as plain lists, dicts and scalars. A `np.ndarray` field comes back as `np.asarray` of the
nested arrays: the values and shape, except that a zero-length dimension loses the ones after
it (nested arrays carry no shape), and the dtype NumPy infers (int64, float64, ...).
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from typing import Any, Union

import msgpack
import numpy as np

from burnish.errors import DatasetError

__all__ = ["SqliteDatasetError", "build_item", "decode_item", "encode_item"]


class SqliteDatasetError(DatasetError):
    """A SQLite dataset file is missing, corrupt, or does not hold the items asked for (Burn:
    `SqliteDatasetError`)."""


def encode_item(item: Any) -> bytes:
    """The MessagePack bytes of `item`.

    Raises:
        TypeError: if `item` holds a value MessagePack cannot carry (a set, an object).
    """
    try:
        return msgpack.packb(item, use_bin_type=True, default=_plain, strict_types=False)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(
            f"Cannot serialize the item {type(item).__name__} for a SQLite dataset: {error}. "
            "Items are dataclasses, NamedTuples, dicts, lists, tuples, NumPy arrays, str, "
            "bytes, int, float, bool or None (nested freely)."
        ) from None


def _plain(value: Any) -> Any:
    """What MessagePack cannot write natively, as something it can."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, field.name) for field in dataclasses.fields(value)]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"unsupported value of type {type(value).__name__}")


def decode_item(blob: Any, item_type: Any, where: str) -> Any:
    """The item encoded in `blob`, built as `item_type` (`None`: plain values).

    Raises:
        SqliteDatasetError: if the blob is not MessagePack or does not fit `item_type`.
    """
    if not isinstance(blob, bytes):
        raise SqliteDatasetError(
            f"{where}: the `item` column holds {type(blob).__name__}, expected a MessagePack "
            "blob. Write the table with `SqliteDatasetWriter`."
        )
    try:
        value = msgpack.unpackb(blob, raw=False, strict_map_key=False, ext_hook=_no_extension)
    except (ValueError, TypeError) as error:  # msgpack's errors, unhashable keys included
        raise SqliteDatasetError(
            f"{where}: the item blob is not valid MessagePack ({error}). The file is corrupt; "
            "write it again."
        ) from None
    return build_item(value, item_type, where)


def _no_extension(code: int, data: bytes) -> Any:
    raise ValueError(f"MessagePack extension type {code} is not an item value")


def build_item(value: Any, item_type: Any, where: str) -> Any:
    """`value` (decoded MessagePack or a row's columns) built as `item_type`.

    Raises:
        SqliteDatasetError: if it does not fit.
    """
    try:
        return _build(value, item_type)
    except (TypeError, ValueError, KeyError) as error:
        name = getattr(item_type, "__name__", repr(item_type))
        raise SqliteDatasetError(
            f"{where} does not fit {name}: {error}. Read it with the item type it was written "
            "with (same fields, in the same order), or with item_type=None for plain values."
        ) from None


def _build(value: Any, hint: Any) -> Any:
    if hint is None or hint is Any or value is None:
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        names = [field.name for field in dataclasses.fields(hint) if field.init]
        fields = _fields(value, names, hint.__name__)
        return hint(**{name: _build(fields[name], hints.get(name)) for name in names})
    if isinstance(hint, type) and issubclass(hint, tuple) and hasattr(hint, "_fields"):
        hints = typing.get_type_hints(hint)
        fields = _fields(value, list(hint._fields), hint.__name__)
        return hint(*(_build(fields[name], hints.get(name)) for name in hint._fields))
    if hint is np.ndarray:
        return np.asarray(value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if hint is bool and isinstance(value, int):  # SQLite stores booleans as 0 / 1
        return bool(value)
    if hint is bytes and isinstance(value, list):  # Burn's `Vec<u8>`: an array of ints
        return bytes(value)
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return _build_generic(value, hint)


def _build_generic(value: Any, hint: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union or origin is types.UnionType:
        concrete = [arg for arg in args if arg is not type(None)]
        return _build(value, concrete[0]) if len(concrete) == 1 else value
    if origin is list and args and isinstance(value, list):
        return [_build(element, args[0]) for element in value]
    if origin is tuple and args and isinstance(value, list):
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(element, args[0]) for element in value)
        return tuple(_build(element, arg) for element, arg in zip(value, args, strict=True))
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return {_build(k, args[0]): _build(v, args[1]) for k, v in value.items()}
    return value


def _fields(value: Any, names: list[str], type_name: str) -> dict[str, Any]:
    """A struct's field values by name, from Burn's array form or a map (extra keys ignored,
    as serde does)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(names):
            raise ValueError(
                f"{type_name} has {len(names)} fields {names}, the stored item {len(value)} values"
            )
        return dict(zip(names, value, strict=True))
    if isinstance(value, dict):
        missing = [name for name in names if name not in value]
        if missing:
            raise ValueError(f"missing field(s) {missing}; stored keys {sorted(map(str, value))}")
        return value
    raise TypeError(f"expected the fields of {type_name}, received {type(value).__name__}")

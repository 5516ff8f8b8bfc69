"""`FakeDataset` (Burn: `FakeDataset`): random items of a given type, for tests and examples."""

from __future__ import annotations

import dataclasses
import enum
import random
import string
import types
import typing
from typing import Any, Generic, Literal, Union

from burnish.data.dataset.base import I
from burnish.data.dataset.in_memory import InMemDataset

__all__ = ["FakeDataset"]

_MAX_LEN = 8  # the longest fake string, bytes or container
_ALPHABET = string.ascii_letters + string.digits


class FakeDataset(InMemDataset[I], Generic[I]):
    """`size` random items of `item_type`, drawn once at construction (Burn fills the dataset
    with `fake::Faker` values of the item type; here the type's annotations say what to draw).

    Supported types: `str`, `int`, `float`, `bool`, `bytes`, `None`, `list[T]`, `tuple[T, ...]`,
    `tuple[A, B]`, `dict[K, V]`, `set[T]`, `T | None` and other unions, `Literal[...]`, enums,
    and dataclasses and `NamedTuple`s whose fields are of these types (nested freely).

    Args:
        size: the number of items.
        item_type: the type of every item (Burn: the type parameter, `FakeDataset::<String>`).
        seed: draws the same items for the same seed; `None` draws new ones each time.

    Raises:
        ValueError: if `size` is negative.
        TypeError: if `item_type` (or a field of it) is not a supported type.

    Example:
        >>> dataset = FakeDataset(11, str, seed=0)
        >>> len(dataset), type(dataset.get(0))
        (11, <class 'str'>)
    """

    def __init__(self, size: int, item_type: Any = str, seed: int | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(
                f"`FakeDataset` needs an integer `size` >= 0. Received: size={size!r}."
            )
        rng = random.Random(seed)
        super().__init__(fake_value(item_type, rng) for _ in range(size))
        self.item_type = item_type


def fake_value(item_type: Any, rng: random.Random) -> Any:
    """One random value of `item_type` (see `FakeDataset` for the supported types).

    Raises:
        TypeError: if the type is not supported.
    """
    if item_type is None or item_type is type(None):
        return None
    scalar = _SCALARS.get(item_type)
    if scalar is not None:
        return scalar(rng)
    if isinstance(item_type, type) and issubclass(item_type, enum.Enum):
        return rng.choice(list(item_type))
    if dataclasses.is_dataclass(item_type) and isinstance(item_type, type):
        hints = typing.get_type_hints(item_type)
        fields = [field for field in dataclasses.fields(item_type) if field.init]
        return item_type(**{field.name: fake_value(hints[field.name], rng) for field in fields})
    if isinstance(item_type, type) and issubclass(item_type, tuple) and _is_named(item_type):
        hints = typing.get_type_hints(item_type)
        names: tuple[str, ...] = getattr(item_type, "_fields")  # noqa: B009 - a NamedTuple's
        return item_type(*(fake_value(hints[name], rng) for name in names))
    return _fake_generic(item_type, rng)


def _fake_generic(item_type: Any, rng: random.Random) -> Any:
    """Values of parametrised types: containers, unions, literals."""
    origin, args = typing.get_origin(item_type), typing.get_args(item_type)
    if origin is Literal:
        return rng.choice(args)
    if origin is Union or origin is types.UnionType:
        return fake_value(rng.choice(args), rng)
    if origin in (list, set, frozenset) and len(args) == 1:
        return origin(fake_value(args[0], rng) for _ in range(rng.randint(0, _MAX_LEN)))
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return tuple(fake_value(args[0], rng) for _ in range(rng.randint(0, _MAX_LEN)))
    if origin is tuple:
        return tuple(fake_value(arg, rng) for arg in args)
    if origin is dict and len(args) == 2:
        return {
            fake_value(args[0], rng): fake_value(args[1], rng)
            for _ in range(rng.randint(0, _MAX_LEN))
        }
    raise TypeError(
        f"`FakeDataset` cannot draw a value of type {item_type!r}. Use str, int, float, bool, "
        "bytes, None, list/tuple/set/dict of those, unions, Literal, enums, or a dataclass or "
        "NamedTuple whose fields have these types."
    )


def _is_named(cls: type) -> bool:
    return hasattr(cls, "_fields") and hasattr(cls, "__annotations__")


def _fake_str(rng: random.Random) -> str:
    return "".join(rng.choices(_ALPHABET, k=rng.randint(1, _MAX_LEN)))


def _fake_bytes(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randint(0, _MAX_LEN)))


_SCALARS: dict[Any, Any] = {
    str: _fake_str,
    int: lambda rng: rng.randint(-(2**31), 2**31 - 1),
    float: lambda rng: rng.uniform(-1e6, 1e6),
    bool: lambda rng: rng.random() < 0.5,
    bytes: _fake_bytes,
}

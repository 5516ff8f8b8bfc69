"""`OptionGroup`, the base of the settings' frozen groups, and `positive`, a field that must be
an integer >= 1 (checked whenever a group is made, so a setter only sets it)."""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["OptionGroup", "positive", "require_positive"]


def positive(setter: str, default: int | None = None) -> Any:
    """A field that must be an integer >= 1 when set (None: unset).

    Args:
        setter: the public setter's name, which the error names (`checkpoint_every`).
        default: its value when unset.
    """
    return dataclasses.field(default=default, metadata={"positive": setter})


class OptionGroup:
    """The base of a frozen settings group: checks its `positive` fields when made."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            setter = field.metadata.get("positive")
            value = getattr(self, field.name)
            if setter is not None and value is not None:
                require_positive(setter, value)


def require_positive(name: str, value: Any) -> None:
    """Raise a ValueError naming `name` unless `value` is an integer >= 1 (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"`{name}` must be an integer >= 1. Received: {name}={value!r}.")

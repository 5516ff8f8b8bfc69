"""`ValueBuilder`: builders as values, as Burn's consuming builders are.

Burn's builders take `self` by value: `builder.shuffle(0)` consumes the builder and returns a
new one, so a setting can never leak into a builder used again elsewhere. In Python a method
that changes the builder and returns it would make `loader.shuffle(0).build(train)` shuffle
`loader.build(valid)` too. Every burnish builder therefore derives from `ValueBuilder` and
writes its setters as `return self._replace(_field=value)`: the builder it was called on stays
as it was.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ValueBuilder"]


class ValueBuilder:
    """A builder whose setters return a changed copy and leave the original unchanged."""

    def _replace(self, **changes: Any) -> Self:
        """A copy of this builder with `changes` (attribute name -> value) applied.

        The copy's lists, dicts and sets are its own (their elements are shared), so a setter
        that appends to the copy's list of metrics or listeners leaves this builder's alone.

        Raises:
            AttributeError: if a change names an attribute the builder does not have (a typo
                in a setter).
        """
        new = object.__new__(type(self))
        vars(new).update({name: _own_containers(value) for name, value in vars(self).items()})
        for name, value in changes.items():
            if name not in vars(self):
                raise AttributeError(
                    f"{type(self).__name__} has no setting {name!r} to replace; the builder's "
                    f"settings are {sorted(vars(self))}."
                )
            setattr(new, name, value)
        return new


def _own_containers(value: Any) -> Any:
    """`value` with every list, dict and set in it copied; other objects shared."""
    if type(value) is list:
        return [_own_containers(item) for item in value]
    if type(value) is dict:
        return {key: _own_containers(item) for key, item in value.items()}
    if isinstance(value, (list, dict, set)):  # a subclass, a set: a shallow copy of its own
        return copy.copy(value)
    return value

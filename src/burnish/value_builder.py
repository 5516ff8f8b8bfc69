"""`ValueBuilder`: builders as values, as Burn's consuming builders are.

Burn's builders take `self` by value: `builder.shuffle(0)` consumes the builder and returns a
new one, so a setting can never leak into a builder used again elsewhere. In Python a method
that changes the builder and returns it would make `loader.shuffle(0).build(train)` shuffle
`loader.build(valid)` too. Every burnish builder therefore derives from `ValueBuilder` and
writes its setters as `return self._replace(_field=value)`: the builder it was called on stays
as it was. A setter whose change is more than a new value takes the copy first and changes it:
`new = self._replace(); new._groups.append(group); return new`.

The same holds for the `with_*` methods of objects that also hold runtime state (an optimizer's
moments, a scheduler's step, a metric's sums): such a class sets `_copies_state = True`, and
its copy gets a deep copy of every attribute, the state as it was at the call included. The two
objects never step or accumulate into the same tensors afterwards; on a fresh object (the usual
case: `with_*` configures before training) the copied state is empty.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ValueBuilder"]


class ValueBuilder:
    """A builder whose setters return a changed copy and leave the original unchanged."""

    #: Whether the object holds runtime state: its copies are deep (see the module docstring).
    _copies_state: ClassVar[bool] = False

    def _replace(self, **changes: Any) -> Self:
        """A copy of this builder with `changes` (attribute name -> value) applied.

        The copy's lists, dicts and sets are its own (their elements are shared), so a setter
        that appends to the copy's list of metrics or listeners leaves this builder's alone.

        An object with `_copies_state` is deep-copied instead, as `copy.deepcopy` copies it
        (the changes are then set as given). A `dict` subclass (a `ModuleRecord`) keeps its items.

        Raises:
            AttributeError: if a change names an attribute the builder does not have (a typo
                in a setter).
        """
        if self._copies_state:  # as the class copies itself (its `__getstate__`, if any)
            new = copy.deepcopy(self)
        else:
            cls = type(self)
            new = dict.__new__(cls) if isinstance(self, dict) else object.__new__(cls)
            if isinstance(self, dict):
                dict.update(new, self)
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

"""`Setters`: the base of `TrainingBuilder`'s setter groups, which hold a `LearnerOptions` and
replace one of its fields per call."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.train.settings.options import LearnerOptions

__all__ = ["Setters"]


class Setters(ValueBuilder):
    """A builder holding the settings as one `LearnerOptions` value (`_settings`).

    A setter is one line: `return self._set("checkpointing", every=iterations)` replaces the
    field `every` of the group `checkpointing` in a new builder; `self._with(listeners=...)`
    replaces a field of the options themselves. The group checks its fields when made.
    """

    if TYPE_CHECKING:  # set by `TrainingBuilder.__init__`; no class annotation at run time,
        _settings: LearnerOptions  # so a subclass's `vars` stay its own methods

    def _set(self, group: str, **changes: Any) -> Self:
        """A new builder whose settings group `group` has `changes` (field -> value)."""
        replaced = dataclasses.replace(getattr(self._settings, group), **changes)
        return self._with(**{group: replaced})

    def _with(self, **changes: Any) -> Self:
        """A new builder whose settings have `changes` (field or group -> value)."""
        return self._replace(_settings=dataclasses.replace(self._settings, **changes))

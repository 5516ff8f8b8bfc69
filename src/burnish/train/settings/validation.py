"""`ValidationOptions`: when the run validates."""

from __future__ import annotations

import dataclasses

from burnish.train.settings.fields import OptionGroup, positive

__all__ = ["ValidationOptions"]


@dataclasses.dataclass(frozen=True)
class ValidationOptions(OptionGroup):
    """When the run validates.

    Attributes:
        every: also validate every this many optimizer steps, inside the epochs (each
            validation is then its own `valid/epoch-N`, N counting validations); None: at
            each epoch's end only.
        needed_by: the settings given that need a validation split, one phrase each
            (train_only.py), found at build: a fit without a validation loader refuses them.
    """

    every: int | None = positive("valid_every")
    needed_by: tuple[str, ...] = ()

"""The data split a metric belongs to (Burn: `Split`), and the enum base the train enums share."""

from __future__ import annotations

import enum
from typing import TypeVar

__all__ = ["TRAINING_SPLITS", "ParsableEnum", "Split", "check_split"]

E = TypeVar("E", bound="ParsableEnum")


class ParsableEnum(enum.Enum):
    """An enum that also accepts its values and member names as strings (any case)."""

    @classmethod
    def parse(cls: type[E], value: object) -> E:
        """`value` itself, or the member named by `value` (a string, any case).

        Raises:
            ValueError: if `value` names no member.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            for member in cls:
                if value.lower() in (member.value, member.name.lower()):
                    return member
        allowed = ", ".join(f"{cls.__name__}.{member.name}" for member in cls)
        strings = ", ".join(repr(member.value) for member in cls)
        raise ValueError(
            f"{cls.__name__} must be one of {allowed} (or {strings}). Received: {value!r}."
        )


class Split(str, ParsableEnum):
    """The data split a metric was computed on (Burn: `Split`).

    A `str` enum: `Split.TRAIN == "train"`, so a split is also a directory name
    (`<artifact_dir>/train`) and a key that plain strings find.
    """

    TRAIN = "train"
    VALID = "valid"
    TEST = "test"

    def __str__(self) -> str:
        return self.value


TRAINING_SPLITS = (Split.TRAIN, Split.VALID)
"""The splits a `Learner` runs, in order."""


def check_split(split: Split | str, splits: tuple[Split, ...] = TRAINING_SPLITS) -> Split:
    """`split` as a `Split`, if it is one of `splits` (default: those a `Learner` runs,
    `"train"` and `"valid"`; renderers also take the `Evaluator`'s `"test"`).

    Raises:
        ValueError: for any other value.
    """
    if split not in splits:
        allowed = tuple(s.value for s in splits)
        raise ValueError(f"`split` must be one of {allowed}. Received: split={split!r}.")
    return Split(split)

"""Where each validation of a run was taken: `valid/validations.json` (with `valid_every`).

With `valid_every(k)` a run validates inside its epochs, and each validation is logged as its
own epoch of the valid split, in Burn's layout: `valid/epoch-N/<Metric>.log` and
`valid/epoch-N/aggregates.json`, N counting validations. This file, beside those directories,
says where in training validation N was taken, for the readers that place it on the training
epochs (`burnish report`, `burnish summary`):

    {"validations": [{"validation": 1, "epoch": 1, "iteration": 50, "optimizer_steps": 50,
                      "epoch_end": false}, ...]}

`iteration` is the training iterations of `epoch` done before the validation (at an epoch's end:
all of them, fewer when a step budget cut the epoch short). Runs without `valid_every` have no
such file: their validation N is epoch N's.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from burnish.io import atomic_write_bytes

__all__ = ["VALIDATIONS_FILE", "ValidationPoint", "read_validations", "write_validations"]

VALIDATIONS_FILE = "validations.json"


@dataclasses.dataclass(frozen=True)
class ValidationPoint:
    """Where a validation was taken.

    Attributes:
        validation: its number: it is logged as `valid/epoch-<validation>`.
        epoch: the training epoch it was taken in.
        iteration: the training iterations of that epoch done before it.
        optimizer_steps: the optimizer steps of the run done before it.
        epoch_end: whether it is the epoch's own validation, at its end.
    """

    validation: int
    epoch: int
    iteration: int
    optimizer_steps: int
    epoch_end: bool

    def to_json(self) -> dict[str, Any]:
        """The point as a JSON object."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, value: Any) -> ValidationPoint:
        """The point a `to_json()` object describes.

        Raises:
            ValueError: if `value` is not such an object.
        """
        fields = [field.name for field in dataclasses.fields(cls)]
        if not isinstance(value, dict) or sorted(value) != sorted(fields):
            raise ValueError(f"expected an object with {fields}, got {value!r}")
        numbers = [value[name] for name in fields[:4]]
        if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
            raise ValueError(f"expected integers in {value!r}")
        if not all(0 <= n < 2**63 for n in numbers):
            raise ValueError(f"expected integers in [0, 2**63) in {value!r}")
        if not isinstance(value["epoch_end"], bool):
            raise ValueError(f"expected a boolean `epoch_end` in {value!r}")
        validation, epoch, iteration, steps = numbers
        return cls(validation, epoch, iteration, steps, value["epoch_end"])


def read_validations(directory: str | os.PathLike) -> list[ValidationPoint] | None:
    """The validations listed in `<directory>/validations.json`, None if there is no file.

    Raises:
        ValueError: if the file is not a validations file (names the file and the fix).
    """
    path = Path(directory) / VALIDATIONS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        document = json.loads(text)
        entries = document["validations"]
        if not isinstance(entries, list):
            raise TypeError(f"`validations` is {type(entries).__name__}, not a list")
        points = [ValidationPoint.from_json(entry) for entry in entries]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"{path} is not a validations file ({error}). It says where each validation of a "
            "`valid_every` run was taken; delete it to read `valid/epoch-N` as epochs."
        ) from None
    return points


def write_validations(directory: str | os.PathLike, points: list[ValidationPoint]) -> None:
    """Write `<directory>/validations.json` atomically."""
    document = {"validations": [point.to_json() for point in points]}
    text = json.dumps(document, indent=1)
    Path(directory).mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(Path(directory) / VALIDATIONS_FILE, (text + "\n").encode("utf-8"))

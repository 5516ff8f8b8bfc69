"""`LrFinderResult`: the learning rates a range test tried, their losses, the suggestion.

Plain Python (no torch), so `burnish report` reads `lr_finder.json` without importing it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from burnish.errors import RecordError
from burnish.io import atomic_write_bytes
from burnish.tune.loss_curve import (
    check_beta,
    check_threshold,
    smooth_losses,
    steepest_descent_index,
)

__all__ = ["LR_FINDER_FILE", "LrFinderResult"]

#: The file `lr_find` writes in the artifact directory, and `burnish report` plots.
LR_FINDER_FILE = "lr_finder.json"
_FORMAT, _VERSION = "burnish.lr_finder", 1


@dataclasses.dataclass(frozen=True)
class LrFinderResult:
    """What a learning-rate range test found (`learner.lr_find`, `burnish.tune.lr_find`).

    Attributes:
        lrs: the learning rate of each iteration, increasing.
        losses: the train step's loss at each rate (NaN or an infinity where it diverged).
        smoothed: the losses smoothed (`smooth_losses`, bias-corrected, with `beta`).
        beta: the smoothing of the sweep.
        early_stop_threshold: the divergence threshold of the sweep (None: none).
        num_iterations: the iterations asked for; fewer points: the sweep stopped early.

    Example:
        >>> result = LrFinderResult([1e-3, 1e-2, 1e-1], [2.3, 1.9, 9.0], beta=0.0)
        >>> result.suggestion(skip_begin=0, skip_end=0)
        0.001
        >>> result.smoothed
        (2.3, 1.9, 9.0)
    """

    lrs: Sequence[float]  # kept as a tuple of floats
    losses: Sequence[float]  # likewise
    beta: float = 0.98
    early_stop_threshold: float | None = 4.0
    num_iterations: int | None = None
    smoothed: tuple[float, ...] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        lrs, losses = _floats(self.lrs, "lrs"), _floats(self.losses, "losses")
        _check_lrs(lrs, losses)
        check_beta(self.beta)
        check_threshold(self.early_stop_threshold)
        asked = len(lrs) if self.num_iterations is None else self.num_iterations
        if isinstance(asked, bool) or not isinstance(asked, int) or asked < len(lrs):
            raise ValueError(
                "`num_iterations` (the iterations asked for) must be an int at least the "
                f"number of points ({len(lrs)}). Received: num_iterations={asked!r}."
            )
        object.__setattr__(self, "lrs", lrs)
        object.__setattr__(self, "losses", losses)
        object.__setattr__(self, "beta", float(self.beta))
        object.__setattr__(self, "num_iterations", asked)
        object.__setattr__(self, "smoothed", tuple(smooth_losses(losses, self.beta)))

    @property
    def stopped_early(self) -> bool:
        """Whether the sweep ended before `num_iterations` (the loss diverged)."""
        return len(self.lrs) < (self.num_iterations or 0)

    def suggestion_index(self, skip_begin: int = 10, skip_end: int = 1) -> int | None:
        """The index of `suggestion()`'s rate, or None (see `suggestion`)."""
        for name, value in (("skip_begin", skip_begin), ("skip_end", skip_end)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"`{name}` must be an int >= 0. Received: {name}={value!r}.")
        return steepest_descent_index(self.lrs, self.smoothed, skip_begin, skip_end)

    def suggestion(self, skip_begin: int = 10, skip_end: int = 1) -> float | None:
        """The rate where the smoothed loss falls fastest against `log(lr)` (Lightning's
        `suggestion()` skips the same points: the first 10 and the last).

        Args:
            skip_begin: points left out at the start (too early to judge).
            skip_end: points left out at the end (where the loss turns up).

        Returns:
            The suggested learning rate, or None when fewer than two finite points remain or
            the loss falls nowhere (sweep longer, or over a wider range).
        """
        index = self.suggestion_index(skip_begin, skip_end)
        return None if index is None else self.lrs[index]

    def to_record(self) -> dict[str, Any]:
        """The result as a record (what `save` writes; `from_record` reads it back)."""
        return {
            "format": _FORMAT,
            "version": _VERSION,
            "beta": self.beta,
            "early_stop_threshold": self.early_stop_threshold,
            "num_iterations": self.num_iterations,
            "lrs": list(self.lrs),
            "losses": list(self.losses),
            "smoothed": list(self.smoothed),  # for other readers; recomputed on load
            "suggestion": self.suggestion(),
        }

    @classmethod
    def from_record(cls, record: Any) -> LrFinderResult:
        """The result `to_record` described (a null number read as NaN, as `save` writes it).

        Raises:
            RecordError: if `record` is not a learning-rate finder record or a value is wrong.
        """
        if not isinstance(record, dict) or record.get("format") != _FORMAT:
            raise RecordError(
                "Expected a learning-rate finder record (`LrFinderResult.to_record()`, "
                f'`{LR_FINDER_FILE}`) with "format": "{_FORMAT}". Received: '
                f"{_describe(record)}."
            )
        if record.get("version") != _VERSION:
            raise RecordError(
                f"This learning-rate finder record has version {record.get('version')!r}; this "
                f"burnish reads version {_VERSION}. Run the finder again with this version."
            )
        try:
            return cls(
                lrs=[_number(x) for x in _list(record, "lrs")],
                losses=[_number(x) for x in _list(record, "losses")],
                beta=record.get("beta", 0.98),
                early_stop_threshold=record.get("early_stop_threshold"),
                num_iterations=record.get("num_iterations"),
            )
        except (TypeError, ValueError) as error:
            raise RecordError(f"Invalid learning-rate finder record: {error}") from None

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result as JSON to `path`, atomically (non-finite numbers as null).

        Returns:
            The path written.
        """
        text = json.dumps(_json_safe(self.to_record()), indent=2, allow_nan=False)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return atomic_write_bytes(path, (text + "\n").encode("utf-8"))

    @classmethod
    def load(cls, path: str | os.PathLike) -> LrFinderResult:
        """Read a result `save` wrote.

        Raises:
            FileNotFoundError: if `path` does not exist.
            RecordError: if it is not JSON or not a learning-rate finder record.
        """
        text = Path(path).read_text(encoding="utf-8", errors="replace")
        try:
            record = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise RecordError(f"{path} is not valid JSON ({error}).") from None
        return cls.from_record(record)

    def __repr__(self) -> str:
        span = f", lrs {self.lrs[0]:.3g}..{self.lrs[-1]:.3g}" if self.lrs else ""
        return (
            f"LrFinderResult({len(self.lrs)} of {self.num_iterations} points{span}, "
            f"suggestion={self.suggestion()!r})"
        )


def _floats(values: Any, name: str) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"`{name}` must be a sequence of numbers. Received: {_describe(values)}.")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"`{name}` must hold numbers. Received: {value!r}.")
    return tuple(float(value) for value in values)


def _check_lrs(lrs: tuple[float, ...], losses: tuple[float, ...]) -> None:
    if len(lrs) != len(losses):
        raise ValueError(
            f"`lrs` and `losses` must be as long (one loss per rate). Received: {len(lrs)} "
            f"rates, {len(losses)} losses."
        )
    for index, (before, after) in enumerate(zip((0.0, *lrs), lrs)):
        if not (math.isfinite(after) and after > before):
            raise ValueError(
                "`lrs` must be finite, positive and increasing. Received: "
                f"lrs[{index}]={after!r} after {before!r}."
            )


def _list(record: dict[str, Any], key: str) -> list[Any]:
    value = record.get(key)
    if not isinstance(value, list):
        raise TypeError(f'"{key}" must be a list of numbers. Received: {_describe(value)}.')
    return value


def _number(value: Any) -> Any:
    return math.nan if value is None else value


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_json_safe(item) for item in value]
    if isinstance(value, dict):
        return {key: _json_safe(item) for key, item in value.items()}
    return value


def _describe(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."

"""Burn's `LoadArgs` for importing foreign files: key remapping and a top-level key."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from burnish.errors import RecordError
from burnish.value_builder import ValueBuilder

__all__ = ["LoadArgs", "remap_keys"]

_RUST_GROUP = re.compile(r"\$(\d+)|\$\{(\w+)\}")


class LoadArgs(ValueBuilder):
    """Where to load a foreign file from and how to rename its keys (Burn's `LoadArgs`).

    Each `with_*` returns new arguments and leaves these as they were.

    Example:
        >>> args = (LoadArgs("resnet.pt")
        ...         .with_top_level_key("state_dict")
        ...         .with_key_remap(r"^module\\.", "")
        ...         .with_key_remap(r"conv\\.(\\d+)", r"conv\\1"))
        >>> record = PyTorchFileRecorder().load(args)  # doctest: +SKIP

    Args:
        path: the file to load (used as given: no extension is added).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self.key_remap: list[tuple[re.Pattern[str], str]] = []
        self.top_level_key: str | None = None

    def with_key_remap(self, pattern: str, replacement: str) -> LoadArgs:
        """Rename keys matching the regex `pattern` with `re.sub(pattern, replacement, key)`.

        Pairs apply in the order given. Replacement groups may be written Python-style
        (`\\1`, `\\g<name>`) or Burn/Rust-style (`$1`, `${name}`).

        Raises:
            RecordError: if `pattern` is not a valid regular expression.
        """
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise RecordError(
                f"Key remap pattern {pattern!r} is not a valid regular expression: {error}."
            ) from None
        rule = (compiled, _RUST_GROUP.sub(_python_group, replacement))
        return self._replace(key_remap=[*self.key_remap, rule])

    def with_top_level_key(self, key: str) -> LoadArgs:
        """Load only the entry `key` of the file's top-level dict (e.g. `"state_dict"`)."""
        return self._replace(top_level_key=key)

    def __repr__(self) -> str:
        remaps = [(p.pattern, r) for p, r in self.key_remap]
        return f"LoadArgs({str(self.path)!r}, key_remap={remaps}, top={self.top_level_key!r})"


def _python_group(match: re.Match[str]) -> str:
    return rf"\g<{match.group(1) or match.group(2)}>"


def select_top_level(obj: Any, key: str | None, path: Path) -> Any:
    """`obj[key]` when a top-level key is asked for, with a clear error when it is missing."""
    if key is None:
        return obj
    if not isinstance(obj, dict) or key not in obj:
        found = sorted(map(str, obj))[:10] if isinstance(obj, dict) else type(obj).__name__
        raise RecordError(
            f"Top-level key {key!r} is not in {str(path)!r}; found: {found}. Fix "
            "`with_top_level_key`, or leave it out."
        )
    return obj[key]


def remap_keys(flat: dict[str, Any], remaps: list[tuple[re.Pattern[str], str]]) -> dict[str, Any]:
    """Apply every `(pattern, replacement)` to each key in order.

    Raises:
        RecordError: if two keys are renamed to the same name.
    """
    if not remaps:
        return flat
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, value in flat.items():
        new = key
        for pattern, replacement in remaps:
            new = pattern.sub(replacement, new)
        if new in out:
            raise RecordError(
                f"Key remapping renames both `{origin[new]}` and `{key}` to `{new}`. Make the "
                "remap patterns more specific."
            )
        out[new], origin[new] = value, key
    return out

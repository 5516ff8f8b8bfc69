"""Renaming tensors with regular expressions (Burn's `KeyRemapper`).

Each pattern is applied in turn to every name (`replace_all`). Replacements use Burn's (Rust
regex) syntax: `$1`, `${1}`, `${name}` for groups, `$$` for a dollar; backslashes are literal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from burnish.errors import RecordError
from burnish.value_builder import ValueBuilder

__all__ = ["KeyRemapper"]

_GROUP = re.compile(r"\$(\$|\d+|\{\w+\}|[A-Za-z_]\w*)")


class KeyRemapper(ValueBuilder):
    """An ordered list of `(pattern, replacement)` rules."""

    def __init__(self) -> None:
        self.patterns: list[tuple[re.Pattern[str], str]] = []

    @classmethod
    def from_patterns(cls, patterns: Iterable[tuple[str, str]]) -> KeyRemapper:
        """A remapper with each `(pattern, replacement)` rule, in order (Burn's name).

        Raises:
            RecordError: as `add_pattern`, for the first bad rule.
        """
        remapper = cls()
        for pattern, replacement in patterns:
            remapper = remapper.add_pattern(pattern, replacement)
        return remapper

    from_pattern_iter = from_patterns

    def add_pattern(self, pattern: str, replacement: str) -> KeyRemapper:
        """A new remapper with the rule appended (this one stays as it was, as Burn's
        `add_pattern` consumes it).

        Raises:
            RecordError: if `pattern` is not a valid regular expression, or `replacement` uses
                Python's group syntax (`\\1`, `\\g<name>`), which Burn's syntax takes
                literally.
        """
        try:
            compiled = re.compile(pattern)
        except re.error as error:
            raise RecordError(f"Invalid key remapping regex {pattern!r}: {error}.") from None
        python_group = re.search(r"\\(\d+|g<\w+>)", replacement)
        if python_group:
            group = python_group.group(1).removeprefix("g<").removesuffix(">")
            raise RecordError(
                f"Key remapping replacement {replacement!r} uses Python's "
                f"`{python_group.group(0)}`; replacements use Burn's syntax, where backslashes "
                f"are literal: write `${{{group}}}` (or `${group}`) for the group."
            )
        return self._replace(
            patterns=[*self.patterns, (compiled, _python_replacement(replacement))]
        )

    def is_empty(self) -> bool:
        """Whether there are no rules."""
        return not self.patterns

    def remap_name(self, name: str) -> str:
        """`name` after every rule."""
        for pattern, replacement in self.patterns:
            name = pattern.sub(replacement, name)
        return name


def _python_replacement(replacement: str) -> str:
    """Rust's `$1`/`${name}` replacement syntax as Python's `\\g<1>`, backslashes literal."""
    escaped = replacement.replace("\\", "\\\\")

    def group(match: re.Match[str]) -> str:
        token = match.group(1)
        if token == "$":
            return "$"
        return f"\\g<{token.strip('{}')}>"

    return _GROUP.sub(group, escaped)

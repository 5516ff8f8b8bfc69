"""Which tensors a store saves or loads (Burn's `PathFilter`).

A filter matches a tensor when any of its criteria does: an exact path, a regular expression
searched in the path (Burn's `Regex::is_match`), or a predicate `(path, container_path) ->
bool`. A filter with no criteria matches nothing; `match_all()` matches everything.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from burnish.errors import RecordError

__all__ = ["PathFilter"]

Predicate = Callable[[str, str], bool]


class PathFilter:
    """Criteria joined by OR; see the module docstring."""

    def __init__(self) -> None:
        self.regexes: list[re.Pattern[str]] = []
        self.exact_paths: list[str] = []
        self.predicates: list[Predicate] = []
        self.all = False

    def with_regex(self, pattern: str) -> PathFilter:
        """Also match paths where `pattern` is found."""
        try:
            self.regexes.append(re.compile(pattern))
        except re.error as error:
            raise RecordError(f"Invalid filter regex {pattern!r}: {error}.") from None
        return self

    def with_regexes(self, patterns: Iterable[str]) -> PathFilter:
        """Also match each of `patterns`."""
        for pattern in patterns:
            self.with_regex(pattern)
        return self

    def with_full_path(self, path: str) -> PathFilter:
        """Also match exactly `path`."""
        self.exact_paths.append(path)
        return self

    def with_full_paths(self, paths: Iterable[str]) -> PathFilter:
        """Also match each of `paths` exactly."""
        self.exact_paths.extend(paths)
        return self

    def with_predicate(self, predicate: Predicate) -> PathFilter:
        """Also match when `predicate(path, container_path)` is true."""
        if not callable(predicate):
            raise TypeError(
                "`with_predicate` takes a function (path, container_path) -> bool; received "
                f"{type(predicate).__name__}."
            )
        self.predicates.append(predicate)
        return self

    def with_predicates(self, predicates: Iterable[Predicate]) -> PathFilter:
        """Also match each of `predicates`."""
        for predicate in predicates:
            self.with_predicate(predicate)
        return self

    def match_all(self) -> PathFilter:
        """Match every path."""
        self.all = True
        return self

    def is_empty(self) -> bool:
        """Whether the filter has no criteria (and so matches nothing)."""
        return not (self.all or self.regexes or self.exact_paths or self.predicates)

    def matches(self, path: str, container_path: str = "") -> bool:
        """Whether the tensor at `path` (inside `container_path`) is selected."""
        if self.all:
            return True
        return (
            path in self.exact_paths
            or any(regex.search(path) for regex in self.regexes)
            or any(predicate(path, container_path) for predicate in self.predicates)
        )

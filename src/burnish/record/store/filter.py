"""Which tensors a store saves or loads (Burn's `PathFilter`).

A filter matches a tensor when any of its criteria does: an exact path, a regular expression
searched in the path (Burn's `Regex::is_match`), or a predicate `(path, container_path) ->
bool`. A filter with no criteria matches nothing; `match_all()` matches everything. Each
`with_*` returns a new filter and leaves the one it was called on as it was (Burn's consume it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from burnish.errors import RecordError
from burnish.value_builder import ValueBuilder

__all__ = ["PathFilter"]

Predicate = Callable[[str, str], bool]


class PathFilter(ValueBuilder):
    """Criteria joined by OR; see the module docstring."""

    def __init__(self) -> None:
        self.regexes: list[re.Pattern[str]] = []
        self.exact_paths: list[str] = []
        self.predicates: list[Predicate] = []
        self.all = False

    def with_regex(self, pattern: str) -> PathFilter:
        """Also match paths where `pattern` is found."""
        return self._replace(regexes=[*self.regexes, _compile(pattern)])

    def with_regexes(self, patterns: Iterable[str]) -> PathFilter:
        """Also match each of `patterns`."""
        return self._replace(regexes=[*self.regexes, *map(_compile, patterns)])

    def with_full_path(self, path: str) -> PathFilter:
        """Also match exactly `path`."""
        return self._replace(exact_paths=[*self.exact_paths, path])

    def with_full_paths(self, paths: Iterable[str]) -> PathFilter:
        """Also match each of `paths` exactly."""
        return self._replace(exact_paths=[*self.exact_paths, *paths])

    def with_predicate(self, predicate: Predicate) -> PathFilter:
        """Also match when `predicate(path, container_path)` is true."""
        return self._replace(predicates=[*self.predicates, _callable(predicate)])

    def with_predicates(self, predicates: Iterable[Predicate]) -> PathFilter:
        """Also match each of `predicates`."""
        return self._replace(predicates=[*self.predicates, *map(_callable, predicates)])

    def match_all(self) -> PathFilter:
        """Match every path."""
        return self._replace(all=True)

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


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise RecordError(f"Invalid filter regex {pattern!r}: {error}.") from None


def _callable(predicate: Predicate) -> Predicate:
    if not callable(predicate):
        raise TypeError(
            "`with_predicate` takes a function (path, container_path) -> bool; received "
            f"{type(predicate).__name__}."
        )
    return predicate

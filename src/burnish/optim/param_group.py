"""A group of a module's parameters, chosen by their paths (Burn: `ParamGroup`).

A parameter's path is its qualified name relative to the module given to `optim.step`
(`"encoder.layers.0.norm.weight"`, `module.` of a DDP wrapper dropped): the names of
`named_parameters()` and of `GradientsParams`. The matching rules are Burn's:

* `from_path(s)`: the path equals one of the given paths;
* `from_predicate(s)`: the path contains the text (every one of them: AND);
  `from_any_predicates`: any of them (OR);
* `from_regex(es)`: the pattern is found anywhere in the path (`re.search`, as Rust's
  `Regex::is_match`; anchor it with `^...$` to match the whole path); every pattern (AND);
  `from_any_regexes`: any (OR);
* `from_ids(ids)`: the given parameters (tensors, found by identity in the module stepped, or
  paths); `ids_from_module(module)`: every parameter of `module`;
* `all()`: every parameter; `fuse(other)`: either group; `exclude(other)`: this group less
  the other's matches.

Example:
    >>> from burnish.optim import ParamGroup
    >>> no_decay = ParamGroup.from_regex(r"(bias|norm.*|embedding.*)$")
    >>> no_decay.matches("block.norm.weight"), no_decay.matches("block.linear.weight")
    (True, False)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from torch import Tensor, nn

from burnish.optim.param_table import param_table
from burnish.optim.params import ParamId

__all__ = ["ParamGroup"]


class ParamGroup:
    """Parameters chosen by path; build one with a `from_*` class method or `all()`."""

    __slots__ = ("_description", "_excludes", "_matcher")

    def __init__(self, matcher: _Matcher, description: str) -> None:
        """Internal: use the `from_*` class methods or `all()`."""
        self._matcher = matcher
        self._excludes: ParamGroup | None = None
        self._description = description

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def all(cls) -> ParamGroup:
        """Every parameter."""
        return cls(_All(), "ParamGroup.all()")

    @classmethod
    def from_path(cls, path: str) -> ParamGroup:
        """The parameter whose path is exactly `path` (e.g. `"head.weight"`)."""
        return cls.from_paths([path])._described(f"ParamGroup.from_path({path!r})")

    @classmethod
    def from_paths(cls, paths: Sequence[str]) -> ParamGroup:
        """The parameters whose path is exactly one of `paths`."""
        exact = frozenset(_strings("paths", paths))
        return cls(_Exact(exact), f"ParamGroup.from_paths({sorted(exact)!r})")

    @classmethod
    def from_predicate(cls, text: str) -> ParamGroup:
        """The parameters whose path contains `text` (e.g. `"backbone"`)."""
        return cls.from_predicates([text])._described(f"ParamGroup.from_predicate({text!r})")

    @classmethod
    def from_predicates(cls, texts: Sequence[str]) -> ParamGroup:
        """The parameters whose path contains every one of `texts` (AND)."""
        parts = _strings("texts", texts)
        return cls(_Include(parts, any_=False), f"ParamGroup.from_predicates({list(parts)!r})")

    @classmethod
    def from_any_predicates(cls, texts: Sequence[str]) -> ParamGroup:
        """The parameters whose path contains any of `texts` (OR)."""
        parts = _strings("texts", texts)
        return cls(_Include(parts, any_=True), f"ParamGroup.from_any_predicates({list(parts)!r})")

    @classmethod
    def from_regex(cls, pattern: str) -> ParamGroup:
        """The parameters in whose path `pattern` is found (`re.search`).

        Raises:
            ValueError: if `pattern` is not a valid regular expression.
        """
        return cls.from_regexes([pattern])._described(f"ParamGroup.from_regex({pattern!r})")

    @classmethod
    def from_regexes(cls, patterns: Sequence[str]) -> ParamGroup:
        """The parameters in whose path every one of `patterns` is found (AND).

        Raises:
            ValueError: if a pattern is not a valid regular expression.
        """
        compiled = _compile(patterns)
        return cls(_Regex(compiled, any_=False), f"ParamGroup.from_regexes({list(patterns)!r})")

    @classmethod
    def from_any_regexes(cls, patterns: Sequence[str]) -> ParamGroup:
        """The parameters in whose path any of `patterns` is found (OR).

        Raises:
            ValueError: if a pattern is not a valid regular expression.
        """
        compiled = _compile(patterns)
        return cls(_Regex(compiled, any_=True), f"ParamGroup.from_any_regexes({list(patterns)!r})")

    @classmethod
    def from_ids(cls, ids: Sequence[ParamId]) -> ParamGroup:
        """The parameters with these ids: parameter tensors, or their paths (Burn's
        `ParamGroup::from_ids`; a burnish `ParamId` is the tensor or its qualified name).

        A tensor is found by identity in the module given to `step`.

        Raises:
            TypeError: if an id is neither a string nor a tensor.
        """
        if isinstance(ids, (str, Tensor)) or not isinstance(ids, Sequence):
            raise TypeError(
                "`ids` must be a list of parameter ids (tensors such as model.head.weight, "
                f"or paths such as 'head.weight'). Received: {ids!r}."
            )
        wrong = [value for value in ids if not isinstance(value, (str, Tensor))]
        if wrong:
            raise TypeError(
                "A parameter id is a parameter tensor or its path (a str). Received: "
                f"{wrong[0]!r} ({type(wrong[0]).__name__}) in `ids`."
            )
        names = frozenset(value for value in ids if isinstance(value, str))
        tensors = tuple(value for value in ids if isinstance(value, Tensor))
        shown = sorted(names) + [f"<tensor {tuple(t.shape)}>" for t in tensors]
        return cls(_Ids(names, tensors), f"ParamGroup.from_ids([{', '.join(shown)}])")

    @classmethod
    def ids_from_module(cls, module: nn.Module) -> ParamGroup:
        """Every parameter of `module`, by identity (Burn: `ParamGroup::ids_from_module`),
        e.g. `ParamGroup.ids_from_module(model.encoder)`."""
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"`module` must be a torch.nn.Module. Received: {type(module).__name__}."
            )
        group = cls.from_ids(list(module.parameters()))
        return group._described(f"ParamGroup.ids_from_module({type(module).__name__})")

    def fuse(self, other: ParamGroup) -> ParamGroup:
        """The parameters of either group (Burn: the excludes of both are dropped)."""
        _check_group(other, "fuse")
        return ParamGroup(_Either(self._matcher, other._matcher), f"{self}.fuse({other})")

    def exclude(self, other: ParamGroup) -> ParamGroup:
        """This group without the parameters `other` matches (its own excludes ignored)."""
        _check_group(other, "exclude")
        result = ParamGroup(self._matcher, f"{self._description}.exclude({other})")
        excluded = ParamGroup(other._matcher, other._description)
        result._excludes = excluded if self._excludes is None else self._excludes.fuse(excluded)
        return result

    # -- use -------------------------------------------------------------------------------

    def matches(self, path: str) -> bool:
        """Whether the parameter at `path` is in the group."""
        if not self._matcher(path):
            return False
        return self._excludes is None or not self._excludes._matcher(path)

    def _bind(self, module: nn.Module) -> ParamGroup:
        """Find the paths of the tensors given to `from_ids` in `module`; returns self."""
        self._matcher.bind(module)
        if self._excludes is not None:
            self._excludes._bind(module)
        return self

    def select(self, paths: Sequence[str]) -> list[str]:
        """The paths of `paths` in the group, in order."""
        return list(filter(self.matches, paths))

    def __repr__(self) -> str:
        return self._description

    def __deepcopy__(self, memo: dict[int, Any]) -> ParamGroup:
        """The group itself: a group is a value to its users, and `from_ids` finds the
        model's own tensors by identity, which a copy of them would never match (a copied
        optimizer or scheduler keeps its groups)."""
        return self

    def _described(self, description: str) -> ParamGroup:
        self._description = description
        return self


class _Matcher:
    """Whether a path matches; plain data, so that groups pickle (spawned processes)."""

    def __call__(self, path: str) -> bool:
        raise NotImplementedError

    def bind(self, module: nn.Module) -> None:
        """Resolve what depends on the module stepped (only `from_ids`' tensors do)."""


@dataclass(frozen=True)
class _All(_Matcher):
    def __call__(self, path: str) -> bool:
        return True


@dataclass(frozen=True)
class _Exact(_Matcher):
    paths: frozenset[str]

    def __call__(self, path: str) -> bool:
        return path in self.paths


@dataclass(eq=False)
class _Ids(_Matcher):
    names: frozenset[str]
    tensors: tuple[Tensor, ...]
    resolved: frozenset[str] = frozenset()  # the tensors' paths in the module last bound

    def __call__(self, path: str) -> bool:
        return path in self.names or path in self.resolved

    def bind(self, module: nn.Module) -> None:
        if self.tensors:
            wanted = set(map(id, self.tensors))
            table = param_table(module)
            self.resolved = frozenset(
                name for name, param in zip(table.names, table.params) if id(param) in wanted
            )


@dataclass(frozen=True)
class _Include(_Matcher):
    parts: tuple[str, ...]
    any_: bool

    def __call__(self, path: str) -> bool:
        found = (part in path for part in self.parts)
        return any(found) if self.any_ else all(found)


@dataclass(frozen=True)
class _Regex(_Matcher):
    patterns: tuple[re.Pattern[str], ...]
    any_: bool

    def __call__(self, path: str) -> bool:
        found = (pattern.search(path) is not None for pattern in self.patterns)
        return any(found) if self.any_ else all(found)


@dataclass(frozen=True)
class _Either(_Matcher):
    first: _Matcher
    second: _Matcher

    def __call__(self, path: str) -> bool:
        return self.first(path) or self.second(path)

    def bind(self, module: nn.Module) -> None:
        self.first.bind(module)
        self.second.bind(module)


def _strings(name: str, values: Sequence[str]) -> tuple[str, ...]:
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise TypeError(
            f"`{name}` must be a list of strings (parameter paths such as 'head.weight'). "
            f"Received: {values!r}."
        )
    return tuple(values)


def _compile(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in _strings("patterns", patterns):
        try:
            compiled.append(re.compile(pattern))
        except re.error as error:
            raise ValueError(
                f"Invalid regex pattern {pattern!r} for a ParamGroup: {error}. Expected a "
                r"Python regular expression matched against parameter paths, such as "
                r"r'^blocks\.\d+\.norm\.'. Fix the pattern (escape literal dots and "
                "brackets with a backslash)."
            ) from None
    return tuple(compiled)


def _check_group(other: object, method: str) -> None:
    if not isinstance(other, ParamGroup):
        raise TypeError(
            f"`ParamGroup.{method}` takes another ParamGroup. Received: "
            f"{type(other).__name__}. Build one with ParamGroup.from_path / from_predicate / "
            "from_regex."
        )

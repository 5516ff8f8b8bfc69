"""Griffe extension: a `@config` class gets the `__init__` its dataclass has at run time.

Also reads a docstring's "Example:" section as doctests, like "Examples:".

`burnish.config.config` wraps `dataclasses.dataclass`, which griffe only recognises by name;
without this, the API reference would show configs without their constructor arguments.
"""

from __future__ import annotations

from typing import Any

from griffe import (
    Attribute,
    Class,
    Expr,
    Extension,
    Function,
    Module,
    Parameter,
    ParameterKind,
    Parameters,
)

_CONFIG_DECORATORS = {"burnish.config.config", "burnish.config"}

# burnish's docstrings title their doctests "Example:" (Google style allows both); griffe
# parses only "Examples:" as doctests and renders "Example:" as a note, `>>>` as quotes.
try:
    from griffe._internal.docstrings import google as _google

    _google._section_kind.setdefault("example", _google._section_kind["examples"])
except (ImportError, AttributeError, KeyError):  # another griffe: "Example:" stays a note
    pass


def _is_config(cls: Class) -> bool:
    for decorator in cls.decorators:
        value = decorator.value
        path = value.canonical_path if isinstance(value, Expr) else str(value)
        if path in _CONFIG_DECORATORS:
            return True
    return False


def _fields(cls: Class) -> list[Parameter]:
    required, defaulted = [], []
    for member in cls.members.values():
        if member.is_alias or not isinstance(member, Attribute) or member.annotation is None:
            continue
        if "ClassVar" in str(member.annotation) or member.name.startswith("_"):
            continue
        default = member.value
        if isinstance(default, Expr) and "field(" in str(default):
            default = "..."  # dataclasses.field(default_factory=...)
        parameter = Parameter(
            member.name,
            annotation=member.annotation,
            kind=ParameterKind.positional_or_keyword,
            default=default,
        )
        (required if default is None else defaulted).append(parameter)
    return required + defaulted


def _visit(obj: Module | Class, seen: set[str]) -> None:
    if obj.path in seen:
        return
    seen.add(obj.path)
    if isinstance(obj, Class) and "__init__" not in obj.members and _is_config(obj):
        init = Function(
            "__init__",
            lineno=0,
            endlineno=0,
            parent=obj,
            parameters=Parameters(
                Parameter("self", kind=ParameterKind.positional_or_keyword), *_fields(obj)
            ),
            returns="None",
        )
        obj.set_member("__init__", init)
        obj.labels.add("dataclass")
    for member in obj.members.values():
        if not member.is_alias and (member.is_module or member.is_class):
            _visit(member, seen)


class BurnishConfigExtension(Extension):
    """Adds the dataclass `__init__` to every `@config` class."""

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        _visit(pkg, set())

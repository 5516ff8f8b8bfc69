"""Burn's `#[derive(Config)]` for Python: dataclasses that save to and load from JSON.

Example:
    >>> import burnish as bn
    >>> @bn.config
    ... class ModelConfig:
    ...     num_classes: int
    ...     hidden_size: int
    ...     dropout: float = 0.5
    >>> cfg = ModelConfig(10, 1024).with_dropout(0.2)
    >>> ModelConfig.from_dict(cfg.to_dict()) == cfg
    True
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import json
import os
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

from typing_extensions import dataclass_transform

from burnish.errors import ConfigError
from burnish.io import atomic_write_bytes
from burnish.storage.url import is_url

__all__ = ["Config", "ConfigError", "config", "is_config", "registered_configs"]

T = TypeVar("T")

_REGISTRY: dict[str, type] = {}
_MARKER = "__burnish_config__"


class Config:
    """Base class for type checkers: every `@config` class gets these methods."""

    def save(self, path: str | os.PathLike) -> Path | str:
        """Write the config as pretty JSON; returns the path (a URL such as
        `"s3://bucket/run/config.json"`: written there, and returned as given)."""
        raise NotImplementedError  # every @config class gets the real method

    @classmethod
    def load(cls: type[T], path: str | os.PathLike) -> T:
        """Read a config saved by `save` (from a path or a URL)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-compatible values."""
        raise NotImplementedError

    @classmethod
    def from_dict(cls: type[T], data: dict[str, Any]) -> T:
        """The config `to_dict` described."""
        raise NotImplementedError

    def to_json(self) -> str:
        """The config as pretty JSON."""
        raise NotImplementedError


@dataclass_transform()
def config(cls: type[T]) -> type[T]:
    """Turn a class with annotated fields into a Burn-style config.

    Required fields come first and may be given positionally; each defaulted field gets a
    `with_<field>(value)` method returning a modified copy. A field annotated `X | None`
    (Burn's `Option<X>`) without a default defaults to None, wherever it stands (keyword-only
    when a required field follows it). `save`/`load` write and read
    pretty JSON; `str(cfg)` is that JSON.

    Args:
        cls: a class with annotated fields (a field may itself be a `@config` class).

    Returns:
        The class as a dataclass with `save`, `load`, `to_dict`, `from_dict`, `to_json` and
        the `with_<field>` methods.

    Raises:
        TypeError: if `cls` is not a class.

    Example:
        Burn's `#[derive(Config)]` with `#[config(default = ...)]`:

        >>> import burnish as bn
        >>> @bn.config
        ... class ModelConfig:
        ...     num_classes: int
        ...     hidden_size: int
        ...     dropout: float = 0.5
        >>> @bn.config
        ... class TrainingConfig:
        ...     model: ModelConfig
        ...     num_epochs: int = 10
        ...     learning_rate: float = 1e-4
        >>> config = TrainingConfig(ModelConfig(10, 512)).with_num_epochs(3)
        >>> config.model.dropout, config.num_epochs
        (0.5, 3)
        >>> path = config.save("artifacts/config.json")
        >>> TrainingConfig.load(path) == config
        True
    """
    if not isinstance(cls, type):
        raise TypeError(f"@config decorates a class. Received: {cls!r}.")
    _copy_mutable_defaults(cls)
    _default_options_to_none(cls)
    data_class: Any = dataclasses.dataclass(cls)
    for field in dataclasses.fields(data_class):
        has_default = (
            field.default is not dataclasses.MISSING
            or field.default_factory is not dataclasses.MISSING
        )
        name = f"with_{field.name}"
        if has_default and name not in data_class.__dict__:
            setattr(data_class, name, _make_with(field.name))
    for name in ("save", "to_dict", "to_json"):
        setattr(data_class, name, globals()[f"_{name}"])
    data_class.load = classmethod(_load)
    data_class.from_dict = classmethod(_from_dict)
    data_class.__str__ = _to_json
    setattr(data_class, _MARKER, True)
    _REGISTRY[f"{data_class.__module__}.{data_class.__qualname__}"] = data_class
    return cast("type[T]", data_class)


def is_config(obj: Any) -> bool:
    """Whether `obj` is a `@config` class or an instance of one."""
    target = obj if isinstance(obj, type) else type(obj)
    return bool(target.__dict__.get(_MARKER, False))


def registered_configs() -> list[type]:
    """Every `@config` class defined so far (used by the generic round-trip test)."""
    return list(_REGISTRY.values())


def _copy_mutable_defaults(cls: type) -> None:
    """Make config/list/dict defaults per-instance copies (dataclasses rejects them as is)."""
    for name in inspect.get_annotations(cls):
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if isinstance(value, (list, dict, set)) or is_config(value):
            setattr(cls, name, dataclasses.field(default_factory=_copier(value)))


def _default_options_to_none(cls: type) -> None:
    """Give every `X | None` field without a default the default None (Burn's `Option`)."""
    annotations = inspect.get_annotations(cls)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolvable forward refs: read the annotations as written
        hints = {}
    undefaulted = [name for name in annotations if name not in cls.__dict__]
    optional = [_is_optional(hints.get(name, annotations[name])) for name in undefaulted]
    last_required = max((i for i, opt in enumerate(optional) if not opt), default=-1)
    for index, name in enumerate(undefaulted):
        if optional[index]:  # keyword-only when a required field follows it
            setattr(cls, name, dataclasses.field(default=None, kw_only=index < last_required))


def _is_optional(hint: Any) -> bool:
    """Whether `hint` (a type, or an annotation string) admits None."""
    if isinstance(hint, str):
        text = hint.replace(" ", "")
        return text.startswith("Optional[") or "None" in text.split("|")
    return _is_union(hint) and type(None) in typing.get_args(hint)


def _copier(value: Any) -> Callable[[], Any]:
    return lambda: copy.deepcopy(value)


def _make_with(name: str) -> Callable[[Any, Any], Any]:
    def with_field(self: Any, value: Any) -> Any:
        return dataclasses.replace(self, **{name: value})

    with_field.__name__ = f"with_{name}"
    with_field.__doc__ = f"Return a copy of this config with `{name}` set to `value`."
    return with_field


# -- serialisation -------------------------------------------------------------------------


def _to_dict(self: Any) -> dict[str, Any]:
    hints = _hints(type(self))
    return {f.name: _encode(getattr(self, f.name), hints[f.name]) for f in dataclasses.fields(self)}


def _to_json(self: Any) -> str:
    return json.dumps(self.to_dict(), indent=2)


def _save(self: Any, path: str | os.PathLike) -> Path | str:
    data = (self.to_json() + "\n").encode()
    if is_url(path):  # a run's artifact directory on object storage
        from burnish.storage.files import write_url

        return write_url(str(path), data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)
    return path


def _encode(value: Any, hint: Any) -> Any:
    if is_config(value):
        body = value.to_dict()
        # A field typed as a union of configs records which one it holds (Burn's enum tag).
        return body if hint is type(value) else {type(value).__name__: body}
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, (tuple, list)):
        return [_encode(v, _item_hint(hint, i)) for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {str(k): _encode(v, _value_hint(hint)) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def _item_hint(hint: Any, index: int) -> Any:
    args = typing.get_args(_strip_optional(hint))
    if not args:
        return Any
    if (len(args) == 2 and args[1] is Ellipsis) or len(args) == 1:
        return args[0]
    return args[index] if index < len(args) else Any


def _value_hint(hint: Any) -> Any:
    args = typing.get_args(_strip_optional(hint))
    return args[1] if len(args) == 2 else Any


def _strip_optional(hint: Any) -> Any:
    if _is_union(hint):
        rest = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return hint


# -- deserialisation -----------------------------------------------------------------------


def _load(cls: type[Any], path: str | os.PathLike) -> Any:
    try:
        text = _read_text(path)
    except FileNotFoundError:
        raise ConfigError(f"Config file {str(path)!r} does not exist.") from None
    except OSError as error:
        raise ConfigError(f"Cannot read config file {str(path)!r}: {error}.") from error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"Config file {str(path)!r} is not valid JSON: {error.msg} at line {error.lineno}, "
            f"column {error.colno}. Fix the file or save it again with `{cls.__name__}.save`."
        ) from None
    try:
        return _decode_config(cls, data, "")
    except ConfigError as error:
        raise ConfigError(f"In config file {str(path)!r}: {error}") from None


def _read_text(path: str | os.PathLike) -> str:
    if is_url(path):
        from burnish.storage.files import read_url

        return read_url(str(path)).decode()
    return Path(path).read_text()


def _from_dict(cls: type[Any], data: dict[str, Any]) -> Any:
    return _decode_config(cls, data, "")


def _decode_config(cls: type[Any], data: Any, path: str) -> Any:
    if not isinstance(data, dict):
        _fail(path or "<root>", f"a JSON object for {cls.__name__}", data)
    hints = _hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        where = _join(path, unknown[0])
        raise ConfigError(
            f"Unknown field `{where}` for {cls.__name__}. Expected one of: "
            f"{', '.join(fields)}. Remove it or check its spelling."
        )
    kwargs = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _decode(data[name], hints[name], _join(path, name))
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(
                f"Missing required field `{_join(path, name)}` of {cls.__name__} "
                f"(expected {_describe(hints[name])})."
            )
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"Invalid {cls.__name__} at `{path or '<root>'}`: {error}") from error


def _decode(value: Any, hint: Any, path: str) -> Any:
    if hint is Any or hint is object:
        return value
    if _is_union(hint):
        return _decode_union(value, hint, path)
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        if value not in typing.get_args(hint):
            _fail(path, _describe(hint), value)
        return value
    if origin in (list, tuple, dict) or hint in (list, tuple, dict):
        return _decode_container(value, hint, origin or hint, path)
    if isinstance(hint, type):
        return _decode_scalar(value, hint, path)
    return value


def _decode_union(value: Any, hint: Any, path: str) -> Any:
    args = typing.get_args(hint)
    if value is None:
        if type(None) in args:
            return None
        _fail(path, _describe(hint), value)
    options = [o for o in args if o is not type(None)]
    configs = {o.__name__: o for o in options if is_config(o)}
    if configs and isinstance(value, dict) and len(value) == 1 and next(iter(value)) in configs:
        name, body = next(iter(value.items()))
        return _decode_config(configs[name], body, path)
    if len(options) == 1:
        return _decode(value, options[0], path)
    for option in options:
        try:
            return _decode(value, option, path)
        except ConfigError:
            continue
    _fail(path, _describe(hint), value)


def _decode_container(value: Any, hint: Any, origin: Any, path: str) -> Any:
    args = typing.get_args(hint)
    if origin is dict:
        if not isinstance(value, dict):
            _fail(path, _describe(hint), value)
        value_hint = args[1] if len(args) == 2 else Any
        return {k: _decode(v, value_hint, _join(path, k)) for k, v in value.items()}
    if not isinstance(value, list):
        _fail(path, _describe(hint), value)
    fixed_tuple = origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis)
    if fixed_tuple and len(value) != len(args):
        _fail(path, _describe(hint), value)
    items = [_decode(v, _item_hint(hint, i), f"{path}[{i}]") for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _decode_scalar(value: Any, hint: type, path: str) -> Any:
    if is_config(hint):
        if isinstance(value, dict) and len(value) == 1 and next(iter(value)) == hint.__name__:
            value = next(iter(value.values()))
        return _decode_config(hint, value, path)
    if issubclass(hint, enum.Enum):
        if isinstance(value, str) and value in hint.__members__:
            return hint[value]
        _fail(path, f"one of {list(hint.__members__)}", value)
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        _fail(path, "float", value)
    if (hint is int and isinstance(value, bool)) or not isinstance(value, hint):
        if hint is Path and isinstance(value, str):
            return Path(value)
        _fail(path, hint.__name__, value)
    return value


# -- helpers -------------------------------------------------------------------------------


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # unresolvable forward refs: fall back to raw annotations
        hints: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            hints.update(getattr(klass, "__annotations__", {}))
        return {k: (Any if isinstance(v, str) else v) for k, v in hints.items()}


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType)


def _describe(hint: Any) -> str:
    if isinstance(hint, type):
        return hint.__name__
    return str(hint).replace("typing.", "")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else str(name)


def _fail(path: str, expected: str, received: Any) -> typing.NoReturn:
    shown = json.dumps(received) if _jsonable(received) else repr(received)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    raise ConfigError(
        f"Field `{path}`: expected {expected}, received {shown} ({type(received).__name__})."
    )


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True

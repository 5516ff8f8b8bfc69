"""The differences between runs' configs: each config flattened to dotted paths, compared.

A config (the JSON of `config.json`) becomes one value per path: `model.hidden_size`,
`optimizer.betas[0]`, `["odd key"].x`. A dict's key is written after a dot when it is plain
(no `.`, `[`, `]`, `"` or whitespace), else in brackets as a JSON string; a list's index is in
brackets; an empty dict or list is a value of its own (`{}`, `[]`). Two different paths never
flatten to the same text. Values are compared as their JSON text, so `1`, `1.0` and `true`
differ and `NaN` equals `NaN`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["ROOT", "ConfigDiff", "diff_configs", "flatten_config"]

#: The path of a config that is not a dict or list (one value, the whole config).
ROOT = ""

_PLAIN_KEY = re.compile(r'[^.\[\]"\s]+')


def flatten_config(config: Any) -> dict[str, str]:
    """Every leaf of `config` as `path -> its JSON text`, in the config's order.

    Iterative (no recursion limit): a deeply nested config flattens too.

    Example:
        >>> flatten_config({"model": {"sizes": [8, 4]}, "lr": 0.1, "a.b": {}})
        {'model.sizes[0]': '8', 'model.sizes[1]': '4', 'lr': '0.1', '["a.b"]': '{}'}
    """
    flat: dict[str, str] = {}
    stack: list[tuple[str, Any]] = [(ROOT, config)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict) and value:
            children = [(_key_path(path, str(key)), child) for key, child in value.items()]
        elif isinstance(value, list) and value:
            children = [(f"{path}[{index}]", child) for index, child in enumerate(value)]
        else:
            flat[path] = _text(value)
            continue
        stack.extend(reversed(children))  # the first child is flattened first
    return flat


@dataclasses.dataclass(frozen=True)
class ConfigDiff:
    """How several configs differ.

    Attributes:
        differing: Path -> each config's value there (JSON text; None where a config has no
            such path), for the paths where the values are not all the same.
        same: Path -> the value every config has there.
    """

    differing: dict[str, list[str | None]]
    same: dict[str, str]


def diff_configs(configs: Sequence[Any]) -> ConfigDiff:
    """Compare `configs` (parsed JSON) path by path; paths in order of first appearance.

    A path missing from some configs differs (shown as missing there).
    """
    flats = [flatten_config(config) for config in configs]
    paths = list(dict.fromkeys(path for flat in flats for path in flat))
    differing: dict[str, list[str | None]] = {}
    same: dict[str, str] = {}
    for path in paths:
        values = [flat.get(path) for flat in flats]
        first = values[0]
        if first is not None and all(value == first for value in values):
            same[path] = first
        else:
            differing[path] = values
    return ConfigDiff(differing, same)


def _key_path(parent: str, key: str) -> str:
    if _PLAIN_KEY.fullmatch(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _text(value: Any) -> str:
    """`value` as JSON text; anything JSON cannot write (never from `json.loads`) as its repr."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)

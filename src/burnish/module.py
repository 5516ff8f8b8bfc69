"""Burn's `Module` methods for PyTorch modules: valid twin, records, files, devices.

`bn.Module` is a `torch.nn.Module` with these methods; every function here also takes a plain
`nn.Module` (`bn.valid(model)`, `bn.save_file(model, path, recorder)`, ...).

Example:
    >>> import burnish as bn
    >>> from burnish.record import CompactRecorder
    >>> class Model(bn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.linear = torch.nn.Linear(4, 2)
    >>> model = Model()
    >>> path = model.save_file("/tmp/model", CompactRecorder())   # /tmp/model.mpk
    >>> model = Model().load_file(path, CompactRecorder(), "cpu")
"""

from __future__ import annotations

import copy
import difflib
import os
import warnings
import weakref
from pathlib import Path
from typing import Any, TypeVar

import torch
from torch import nn

from burnish.backend import device as parse_device
from burnish.errors import RecordError
from burnish.record.base import FileRecorder
from burnish.record.store import ApplyResult, ModuleStore, load_from, save_into
from burnish.record.store.module_record import ModuleRecord
from burnish.record.tree import flatten

__all__ = [
    "Module",
    "fork",
    "into_record",
    "load_file",
    "load_from",
    "load_record",
    "num_params",
    "save_file",
    "save_into",
    "to_device",
    "valid",
]

M = TypeVar("M", bound=nn.Module)
_MAX_LISTED = 10


def valid(module: M) -> M:
    """The module's inference twin (Burn's `AutodiffModule::valid`).

    The twin is a new module tree in eval mode whose parameters are `requires_grad=False`
    views of the same storage as `module`'s, and whose buffers are the same tensors: in-place
    updates to `module` (optimizer steps, `load_record`) show in the twin; `module` keeps its
    mode. It costs a few Python objects per submodule, no tensor copy. Moving `module` to
    another device afterwards is not seen: call `valid()` again.
    """
    return _twin(module, {})


def _twin(module: nn.Module, memo: dict[int, Any]) -> Any:
    if id(module) in memo:
        return memo[id(module)]
    twin = module.__class__.__new__(module.__class__)
    memo[id(module)] = twin
    state = twin.__dict__
    state.update(module.__dict__)
    state["training"] = False
    state["_parameters"] = {
        name: None if p is None else _frozen(p, memo) for name, p in module._parameters.items()
    }
    state["_buffers"] = dict(module._buffers)
    state["_modules"] = {
        name: None if child is None else _twin(child, memo)
        for name, child in module._modules.items()
    }
    return twin


def _frozen(param: torch.Tensor, memo: dict[int, Any]) -> nn.Parameter:
    if id(param) not in memo:  # tied parameters stay tied
        memo[id(param)] = nn.Parameter(param.detach(), requires_grad=False)
    return memo[id(param)]


def num_params(module: nn.Module) -> int:
    """Number of parameter elements, tied parameters counted once (Burn's `num_params`)."""
    return sum(p.numel() for p in module.parameters())


def to_device(module: M, device: torch.device | str) -> M:
    """Move `module` to `device` in place and return it (Burn's `to_device`)."""
    return module.to(parse_device(device))


def fork(module: M, device: torch.device | str) -> M:
    """An independent copy of `module` on `device` (Burn's `fork`): no storage, no graph shared.

    The copy keeps its parameters' identity, as Burn's `ParamId`s: an optimizer that stepped
    `module` goes on stepping the copy with the same state.
    """
    forked = copy.deepcopy(module).to(parse_device(device))
    _LINEAGES[forked] = _LINEAGES.setdefault(module, object())
    return forked


# A module and its forks share one token: the same parameters, in Burn's sense.
_LINEAGES: weakref.WeakKeyDictionary[nn.Module, object] = weakref.WeakKeyDictionary()


def same_parameters(first: nn.Module, second: nn.Module) -> bool:
    """Whether `second` is `first`, or both descend by `fork` from the same module."""
    if first is second:
        return True
    token = _LINEAGES.get(first)
    return token is not None and _LINEAGES.get(second) is token


def into_record(module: nn.Module) -> ModuleRecord:
    """The module's record, Burn main's `ModuleRecord`: a dict (its `state_dict`, detached,
    storage shared) that also `save(path)`s a Burnpack file Burn loads."""
    return ModuleRecord.from_module(module)


def load_record(module: M, record: Any, strict: bool = True) -> M:
    """Load a record into `module`'s parameters and buffers, in place; returns `module`.

    The record may be flat (`{"linear.weight": t}`, a `state_dict`) or nested
    (`{"linear": {"weight": t}}`), at any precision: each tensor is cast to the dtype and
    device of the parameter it loads into, so the module keeps its dtype.

    Args:
        module: the module to load into.
        record: what `into_record` (or a recorder's `load`) returned.
        strict: when False, missing, unexpected and mismatched entries are skipped and
            reported in a warning instead of raising.

    Raises:
        RecordError: naming each missing or unexpected key and each shape or kind mismatch
            (actual vs expected), when `strict`.
    """
    if isinstance(record, ModuleRecord) and record.needs_apply():
        return record.apply_to(module, strict=strict)
    if not isinstance(record, dict):
        raise RecordError(
            f"A module record is a dict of tensors; received a {type(record).__name__}."
        )
    flat = flatten(record)
    expected = module.state_dict()
    problems, skip = _compare(flat, expected, type(module).__name__)
    if problems and strict:
        shown = "\n  ".join(problems[:_MAX_LISTED])
        more = (
            f"\n  ... and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        )
        raise RecordError(
            f"Record does not match {type(module).__name__} ({len(problems)} problem"
            f"{'s' if len(problems) > 1 else ''}):\n  {shown}{more}\nFix the record or the "
            "module, or pass strict=False to load only the matching entries."
        )
    if problems:
        warnings.warn(
            f"load_record(strict=False) skipped {len(problems)} entr"
            f"{'ies' if len(problems) > 1 else 'y'} of {type(module).__name__}: "
            + "; ".join(problems),
            stacklevel=2,
        )
    matched = {k: v for k, v in flat.items() if k in expected and k not in skip}
    try:
        module.load_state_dict(matched, strict=strict)
    except RuntimeError as error:  # a module's own _load_from_state_dict check
        raise RecordError(f"Cannot load record into {type(module).__name__}: {error}") from None
    return module


def _compare(
    flat: dict[str, Any], expected: dict[str, Any], name: str
) -> tuple[list[str], set[str]]:
    problems: list[str] = []
    skip: set[str] = set()
    for key in expected:
        if key not in flat:
            problems.append(f"missing key `{key}`: expected {_describe(expected[key])}")
    for key, value in flat.items():
        if key not in expected:
            close = difflib.get_close_matches(key, list(expected), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            if key.rpartition(".")[2] in ("gamma", "beta"):  # Burn's norm names
                hint = (
                    " (Burn's layout: load the file with `ModuleRecord.load(path)` or "
                    "`load_from(model, BurnpackStore.from_file(path))`, which adapt it)"
                )
            problems.append(f"unexpected key `{key}`: {_describe(value)} not in {name}{hint}")
            continue
        target = expected[key]
        if not isinstance(target, torch.Tensor):
            continue  # extra state: the module's own hook checks it
        error = _mismatch(value, target)
        if error:
            problems.append(f"key `{key}`: {error}")
            skip.add(key)
    return problems, skip


def _mismatch(value: Any, target: torch.Tensor) -> str | None:
    if not isinstance(value, torch.Tensor):
        return f"expected {_describe(target)}, received {_describe(value)}"
    if value.shape != target.shape:
        return f"shape {list(value.shape)} in the record, expected {list(target.shape)}"
    if _kind(value.dtype) != _kind(target.dtype):
        return (
            f"dtype {value.dtype} ({_kind(value.dtype)}) in the record, expected "
            f"{target.dtype} ({_kind(target.dtype)})"
        )
    return None


def _kind(dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "bool"
    if dtype.is_floating_point:
        return "float"
    return "complex" if dtype.is_complex else "int"


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')} tensor of shape {list(value.shape)}"
    return f"a {type(value).__name__}"


def save_file(
    module: nn.Module, path: str | os.PathLike, recorder: FileRecorder | None = None
) -> Path:
    """Save `module`'s record with `recorder` (default `DefaultRecorder`); returns the path.

    The recorder adds its extension (`model` -> `model.mpk`).
    """
    recorder = recorder if recorder is not None else _default_recorder()
    kind = type(module)
    return recorder.record(
        into_record(module), path, record_type=f"module:{kind.__module__}.{kind.__qualname__}"
    )


def load_file(
    module: M,
    path: str | os.PathLike,
    recorder: FileRecorder | None = None,
    device: torch.device | str | None = None,
    strict: bool = True,
) -> M:
    """Load a file saved by `save_file` into `module` (moved to `device` first); returns it.

    Raises:
        RecordError: for a missing/corrupt/foreign file, or a record that does not match
            the module (see `load_record`).
    """
    recorder = recorder if recorder is not None else _default_recorder()
    record = recorder.load(path)
    if device is not None:
        module = to_device(module, device)
    try:
        return load_record(module, record, strict=strict)
    except RecordError as error:
        raise RecordError(f"Cannot load {str(path)!r} into the module: {error}") from None


def _default_recorder() -> FileRecorder:
    from burnish.record import DefaultRecorder

    return DefaultRecorder()


class Module(nn.Module):
    """A `torch.nn.Module` with Burn's module methods; subclass it like `nn.Module`."""

    def valid(self: M) -> M:
        """The inference twin (eval mode, no autograd, shared storage): see `burnish.valid`."""
        return valid(self)

    def num_params(self) -> int:
        """Number of parameter elements (tied parameters counted once)."""
        return num_params(self)

    def to_device(self: M, device: torch.device | str) -> M:
        """Move to `device` in place; returns self."""
        return to_device(self, device)

    def fork(self: M, device: torch.device | str) -> M:
        """An independent copy on `device`."""
        return fork(self, device)

    def into_record(self) -> ModuleRecord:
        """The module's record (a `ModuleRecord`: its state_dict, and `save(path)`)."""
        return into_record(self)

    def load_record(self: M, record: Any, strict: bool = True) -> M:
        """Load a record in place (any precision, flat or nested); returns self."""
        return load_record(self, record, strict=strict)

    def save_file(self, path: str | os.PathLike, recorder: FileRecorder | None = None) -> Path:
        """Save with `recorder` (its extension is added); returns the path written."""
        return save_file(self, path, recorder)

    def load_file(
        self: M,
        path: str | os.PathLike,
        recorder: FileRecorder | None = None,
        device: torch.device | str | None = None,
        strict: bool = True,
    ) -> M:
        """Load a file saved by `save_file` into this module; returns self."""
        return load_file(self, path, recorder, device, strict=strict)

    def save_into(self, store: ModuleStore) -> None:
        """Save into a store (`BurnpackStore`, `SafetensorsStore`): see `burnish.save_into`."""
        save_into(self, store)

    def load_from(self, store: ModuleStore) -> ApplyResult:
        """Load from a store in place; returns what was applied: see `burnish.load_from`."""
        return load_from(self, store)

    def checkpoint_blocks(self, blocks: Any = None, *, enabled: bool = True) -> list[str]:
        """Checkpoint this module's blocks (activations recomputed in the backward pass);
        returns their names. See `burnish.checkpoint_blocks`."""
        from burnish.gradient_checkpointing import checkpoint_blocks

        return checkpoint_blocks(self, blocks, enabled=enabled)

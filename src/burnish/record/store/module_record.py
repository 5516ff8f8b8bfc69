"""Burn main's `ModuleRecord` (burn-core's `store`): a module's tensors, saved as Burnpack.

`model.into_record()` returns one. It is a dict (the module's `state_dict`: code that reads or
loads it as a dict keeps working) with Burn's methods: `save(path)` / `into_bytes()` write a
Burnpack file in Burn's layout (Linear `[in, out]`, norms' `gamma`/`beta`, no BatchNorm
`num_batches_tracked`, each tensor's `param_id`), which Burn's `Module::load_file` loads;
`ModuleRecord.load(path)` / `from_bytes` read one (Burn's or burnish's), and
`model.load_record(record)` applies it, adapting Burn's layout.

Example:
    >>> import torch
    >>> import burnish as bn
    >>> class Model(bn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc = torch.nn.Linear(3, 2)
    >>> path = Model().into_record().save("/tmp/model")  # /tmp/model.bpk
    >>> model = Model().load_record(bn.record.ModuleRecord.load(path))
"""

from __future__ import annotations

import enum
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

from burnish.errors import RecordError
from burnish.io import atomic_open
from burnish.record.store import burnpack
from burnish.record.store.adapter import IdentityAdapter, PyTorchToBurnAdapter
from burnish.record.store.applier import apply
from burnish.record.store.apply_result import ApplyResult
from burnish.record.store.layout import (
    BURN,
    BURN_WRITTEN,
    LAYOUT_KEY,
    PYTORCH,
    FileLayout,
    burn_lacks,
    converts_from_burn,
    file_layout,
    load_adapter,
)
from burnish.record.store.param_id import param_id
from burnish.record.store.snapshot import TensorSnapshot
from burnish.record.store.traversal import module_tensors
from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["DTypePolicy", "ModuleRecord"]

M = TypeVar("M", bound=nn.Module)
_LISTED = 10


class DTypePolicy(enum.Enum):
    """How a parameter's dtype is chosen when a record is loaded (Burn's names)."""

    #: The parameter takes the record's dtype (Burn's default).
    FromRecord = "FromRecord"
    #: The record's data is cast to the parameter's dtype (burnish's default, as its
    #: `load_record` always did: the module keeps its dtype).
    CastToModule = "CastToModule"


class ModuleRecord(ValueBuilder, dict[str, torch.Tensor]):
    """A module's tensors by `state_dict` name, with Burn's `ModuleRecord` methods.

    The builder methods (`with_dtype_policy`, `allow_partial`, ...) return a new record holding
    the same tensors and leave this one as it was, as Burn's consume the record.
    """

    def __init__(self, tensors: Any = (), layout: FileLayout | None = PYTORCH) -> None:
        super().__init__(tensors)
        self.layout = layout
        self.containers: dict[str, tuple[str, ...]] = {}
        self.param_ids: dict[str, int | None] = {}
        self.dtype_policy = DTypePolicy.CastToModule
        self.partial = False
        self.unused_allowed = False
        self.validating = True

    @classmethod
    def from_module(cls, module: nn.Module) -> ModuleRecord:
        """The module's record: its `state_dict` (detached, storage shared), ids and types."""
        record = cls(module.state_dict())
        for entry in module_tensors(module):
            path = ".".join(entry.path_stack)
            record.containers[path] = entry.container_stack
            record.param_ids[path] = param_id(entry.tensor)
        return record

    # -- Burn's builder methods --------------------------------------------------------------

    def len(self) -> int:
        """The number of tensors."""
        return len(self)

    def is_empty(self) -> bool:
        """Whether the record holds no tensor."""
        return not self

    def with_dtype_policy(self, policy: DTypePolicy) -> Self:
        """How loading chooses each parameter's dtype."""
        if not isinstance(policy, DTypePolicy):
            raise TypeError(
                "`with_dtype_policy` takes DTypePolicy.FromRecord or DTypePolicy.CastToModule; "
                f"received {policy!r}."
            )
        return self._replace(dtype_policy=policy)

    def cast_to_module_dtype(self) -> Self:
        """`with_dtype_policy(DTypePolicy.CastToModule)`."""
        return self.with_dtype_policy(DTypePolicy.CastToModule)

    def allow_partial(self, allow: bool = True) -> Self:
        """Let a load leave module tensors the record lacks as they are."""
        return self._replace(partial=bool(allow))

    def allow_unused(self, allow: bool = True) -> Self:
        """Let a load ignore record tensors no module tensor takes."""
        return self._replace(unused_allowed=bool(allow))

    def validate(self, validate: bool = True) -> Self:
        """Raise on tensors whose shape does not fit (default on)."""
        return self._replace(validating=bool(validate))

    # -- files -------------------------------------------------------------------------------

    def save(self, path: str | os.PathLike) -> Path:
        """Write a Burnpack file Burn loads (`.bpk` added without an extension); the path.

        Overwrites an existing file, as Burn's `ModuleRecord::save` does.
        """
        path = Path(path)
        path = path.with_suffix(".bpk") if not path.suffix else path
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as file:
            for chunk in self._chunks():
                file.write(chunk)
        return path

    def into_bytes(self) -> bytes:
        """The Burnpack container `save` writes, in memory."""
        return b"".join(bytes(chunk) for chunk in self._chunks())

    @classmethod
    def load(cls, path: str | os.PathLike) -> ModuleRecord:
        """Read a Burnpack file (Burn's or burnish's); its layout comes with it.

        As Burn's `Reader::from_file`, a path without an extension that does not exist is
        read with `.bpk` added, so `ModuleRecord.load(f"{dir}/model")` reads what
        `save(f"{dir}/model")` wrote.

        Raises:
            RecordError: when no file is at the path (nor at the path with `.bpk`, where
                that was tried).
        """
        given = Path(path)
        tried = [given]
        if not given.suffix and not given.exists():
            tried.append(given.with_suffix(".bpk"))
        path = tried[-1]
        if not path.is_file():
            names = " nor ".join(repr(str(p)) for p in tried)
            raise RecordError(f"No Burnpack file at {names}. Check the path.")
        return cls._from_reader(burnpack.PackReader.from_file(path))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray) -> ModuleRecord:
        """Read a Burnpack container held in memory."""
        return cls._from_reader(burnpack.PackReader.from_buffer(bytearray(data)))

    @classmethod
    def _from_reader(cls, reader: burnpack.PackReader) -> ModuleRecord:
        ids = {name: d.param_id for name, d in reader.descriptors.items()}
        record = cls({name: reader.tensor(name) for name in reader.names()},
                     file_layout(reader.metadata, ids.values()))  # fmt: skip
        record.param_ids = ids
        return record

    def _chunks(self) -> list[bytes | memoryview]:
        adapt = self.layout == PYTORCH and set(self) <= set(self.containers)
        adapter = PyTorchToBurnAdapter() if adapt else IdentityAdapter()
        tensors = []
        for name, tensor in self.items():
            containers = self.containers.get(name, ())
            path = tuple(name.split("."))
            if adapt and burn_lacks(path, containers):
                continue
            snapshot = adapter.adapt(TensorSnapshot(
                path, containers, tuple(tensor.shape), tensor.dtype, self.param_ids.get(name),
                lambda tensor=tensor: tensor.detach(),  # type: ignore[misc]
            ))  # fmt: skip
            tensors.append(burnpack.PackTensor(snapshot.full_path, snapshot.dtype,
                                               tuple(snapshot.shape), snapshot.param_id,
                                               snapshot.data_fn))  # fmt: skip
        layout = BURN if adapt else self.layout
        metadata: dict[str, str] = {LAYOUT_KEY: layout} if layout else {}
        if layout == BURN_WRITTEN:  # Burn's store's tensors, as read: still for them to tell
            metadata = {"format": "burnpack", "producer": "burn"}
        return list(burnpack.encode_chunks(tensors, metadata))

    # -- loading -----------------------------------------------------------------------------

    def needs_apply(self) -> bool:
        """Whether loading needs `apply_to`: a layout other than PyTorch's, or Burn's settings.

        A record in PyTorch's layout with the defaults is a state_dict, and `load_record`
        loads it as one (its `strict` argument and messages unchanged).
        """
        return self.layout != PYTORCH or not (
            self.dtype_policy is DTypePolicy.CastToModule
            and not self.partial
            and not self.unused_allowed
            and self.validating
        )

    def apply_to(self, module: M, strict: bool = True) -> M:
        """Load into `module` in place, by the record's settings; returns `module`.

        `strict=False` means what it means for a state_dict (`load_record`): missing, unused
        and mismatched tensors are skipped and reported in a warning instead of raising.

        Raises:
            RecordError: for shapes that do not fit (unless `validate(False)`), module tensors
                the record lacks (unless `allow_partial()`), record tensors no module tensor
                takes (unless `allow_unused()`), when `strict`; or a file that does not say
                its layout where it matters.
        """
        shapes = {name: tuple(tensor.shape) for name, tensor in self.items()}
        adapter = load_adapter(self.layout, IdentityAdapter(), False, module, "ModuleRecord",
                               shapes)  # fmt: skip
        burn = converts_from_burn(adapter)
        snapshots = {name: TensorSnapshot.from_tensor(name, tensor, self.param_ids.get(name))
                     for name, tensor in self.items()}  # fmt: skip
        if self.dtype_policy is DTypePolicy.FromRecord:
            self._adopt_dtypes(module, burn)
        problems = self._problems(apply(module, snapshots, None, adapter), burn)
        if problems and not strict:
            warnings.warn(
                f"load_record(strict=False) skipped {len(problems)} entr"
                f"{'ies' if len(problems) > 1 else 'y'} of {type(module).__name__}: "
                + "; ".join(problems),
                stacklevel=3,
            )
        elif problems:
            raise RecordError(
                f"ModuleRecord does not fit {type(module).__name__} ({len(problems)} "
                "problem(s)):\n  " + "\n  ".join(problems[:_LISTED]) + "\nFix the module or "
                "the record, or load with .allow_partial(), .allow_unused() or .validate(False) "
                "(or strict=False)."
            )
        return module

    def _problems(self, result: ApplyResult, burn: bool) -> list[str]:
        """What the record's settings do not allow of `result` (Burn's BatchNorm has no
        `num_batches_tracked`: a load from Burn's layout does not miss it)."""
        missing = [path for path, containers in result.missing if not (
            burn and burn_lacks(tuple(path.split(".")), tuple(containers.split("."))))]  # fmt: skip
        problems = [str(e) for e in result.errors] if self.validating else []
        problems += [] if self.partial else [f"missing {p!r}" for p in missing]
        problems += [] if self.unused_allowed else [f"unused {p!r}" for p in result.unused]
        return problems

    def _adopt_dtypes(self, module: nn.Module, burn: bool) -> None:
        names = {"weight": "gamma", "bias": "beta"} if burn else {}
        for entry in module_tensors(module):
            path = ".".join(entry.path_stack)
            head, _, leaf = path.rpartition(".")
            alternative = ".".join(filter(None, (head, names.get(leaf, leaf))))
            source = self.get(path, self.get(alternative))
            if (
                source is not None
                and source.dtype.is_floating_point
                and (entry.tensor.dtype.is_floating_point and source.dtype != entry.tensor.dtype)
            ):
                entry.tensor.data = entry.tensor.data.to(source.dtype)

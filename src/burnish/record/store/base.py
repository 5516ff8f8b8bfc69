"""What every store shares (Burn's `ModuleStore` and the builder methods of its stores).

A store is configured with chained builder calls (each returns a new store and leaves the one
it was called on as it was, as Burn's consuming builders), then passed to
`save_into(model, store)` or `load_from(model, store)`. Filters select tensors (on save and
load), the key remapper renames what is read, adapters convert layouts (`with_from_adapter` on
load, `with_to_adapter` on save), `allow_partial` lets a load leave module tensors the store
lacks, `validate` (default on) turns shape/dtype errors into an exception, `overwrite` lets a
save replace a file.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import TYPE_CHECKING

from torch import nn

from burnish.errors import RecordError
from burnish.record.store.adapter import IdentityAdapter, ModuleAdapter
from burnish.record.store.applier import apply
from burnish.record.store.apply_result import ApplyResult
from burnish.record.store.collector import collect
from burnish.record.store.filter import PathFilter, Predicate
from burnish.record.store.indices import map_indices_contiguous
from burnish.record.store.layout import burn_lacks, converts_from_burn
from burnish.record.store.remapper import KeyRemapper
from burnish.record.store.snapshot import TensorSnapshot
from burnish.value_builder import ValueBuilder

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["ModuleStore"]

_LISTED = 10


class ModuleStore(ValueBuilder, ABC):
    """Base of `BurnpackStore`, `SafetensorsStore` and `PytorchStore`."""

    def __init__(self) -> None:
        self.path_filter: PathFilter | None = None
        self.remapper = KeyRemapper()
        self.from_adapter: ModuleAdapter = IdentityAdapter()
        self.to_adapter: ModuleAdapter = IdentityAdapter()
        self.explicit_from_adapter = False
        self.contiguous_indices = False
        self.skipping_enum_variants = False
        self.partial = False
        self.validating = True
        self.overwriting = False
        self.extra_metadata: dict[str, str] = {}
        self._snapshots: dict[str, TensorSnapshot] | None = None

    # -- builder methods (Burn's names) --------------------------------------------------------

    def filter(self, path_filter: PathFilter) -> Self:
        """Use `path_filter` to select tensors (replaces any earlier criteria)."""
        return self._replace(path_filter=path_filter)

    with_filter = filter

    def _criteria(self) -> PathFilter:
        return self.path_filter if self.path_filter is not None else PathFilter()

    def with_regex(self, pattern: str) -> Self:
        """Select tensors whose path matches `pattern` (criteria are OR-ed)."""
        return self._replace(path_filter=self._criteria().with_regex(pattern))

    def with_regexes(self, patterns: Iterable[str]) -> Self:
        """Select tensors matching any of `patterns`."""
        return self._replace(path_filter=self._criteria().with_regexes(patterns))

    def with_full_path(self, path: str) -> Self:
        """Select the tensor at exactly `path`."""
        return self._replace(path_filter=self._criteria().with_full_path(path))

    def with_full_paths(self, paths: Iterable[str]) -> Self:
        """Select the tensors at exactly `paths`."""
        return self._replace(path_filter=self._criteria().with_full_paths(paths))

    def with_predicate(self, predicate: Predicate) -> Self:
        """Select tensors for which `predicate(path, container_path)` is true."""
        return self._replace(path_filter=self._criteria().with_predicate(predicate))

    def with_predicates(self, predicates: Iterable[Predicate]) -> Self:
        """Select tensors for which any of `predicates` is true."""
        return self._replace(path_filter=self._criteria().with_predicates(predicates))

    def match_all(self) -> Self:
        """Select every tensor."""
        return self._replace(path_filter=PathFilter().match_all())

    def remap(self, remapper: KeyRemapper) -> Self:
        """Rename the tensors read with `remapper` (replaces earlier rules)."""
        return self._replace(remapper=remapper, _snapshots=None)

    def with_key_remapping(self, from_pattern: str, to: str) -> Self:
        """Rename tensors read: regex `from_pattern` replaced by `to` (`$1` for groups)."""
        return self._replace(remapper=self.remapper.add_pattern(from_pattern, to), _snapshots=None)

    with_remap_pattern = with_key_remapping  # BurnpackStore's name for it

    def with_from_adapter(self, adapter: ModuleAdapter) -> Self:
        """Adapt tensors read, before they are applied (e.g. `BurnToPyTorchAdapter()`)."""
        return self._replace(
            from_adapter=_adapter(adapter, "with_from_adapter"), explicit_from_adapter=True
        )

    def with_to_adapter(self, adapter: ModuleAdapter) -> Self:
        """Adapt tensors before they are written (e.g. `PyTorchToBurnAdapter()`)."""
        return self._replace(to_adapter=_adapter(adapter, "with_to_adapter"))

    def map_indices_contiguous(self, map: bool = True) -> Self:
        """Renumber gaps in the file's layer indices on load (`fc.2` -> `fc.1`); default off.

        Burn's `PytorchStore` defaults it on, for Burn modules whose `Vec` has no gaps; a
        burnish module is PyTorch's, whose `nn.Sequential` keeps them, so here it is off.
        """
        return self._replace(contiguous_indices=bool(map), _snapshots=None)

    def skip_enum_variants(self, skip: bool = True) -> Self:
        """Burn's switch for enum variant names in paths; PyTorch modules have none.

        burnish's paths never hold enum variants (a PyTorch module has no enums), which is
        what Burn's `skip_enum_variants(true)` makes of its own; the setting is kept so ported
        code runs, and changes nothing.
        """
        return self._replace(skipping_enum_variants=bool(skip))

    def allow_partial(self, allow: bool = True) -> Self:
        """Let a load succeed when module tensors are missing from the store."""
        return self._replace(partial=bool(allow))

    def validate(self, validate: bool = True) -> Self:
        """Raise on tensors that cannot be applied (shape/dtype); default on."""
        return self._replace(validating=bool(validate))

    def overwrite(self, overwrite: bool = True) -> Self:
        """Let a save replace an existing file (default: refuse)."""
        return self._replace(overwriting=bool(overwrite))

    def metadata(self, key: str, value: str) -> Self:
        """Add a `key: value` string pair to the file's metadata."""
        return self._replace(extra_metadata={**self.extra_metadata, str(key): str(value)})

    def clear_metadata(self) -> Self:
        """Drop all metadata, the defaults included."""
        return self._replace(extra_metadata={})

    # -- direct access -----------------------------------------------------------------------

    def keys(self) -> list[str]:
        """The (remapped) tensor names the store holds, sorted."""
        return sorted(self.get_all_snapshots())

    def get_snapshot(self, name: str) -> TensorSnapshot | None:
        """The snapshot named `name` (after remapping), or None."""
        return self.get_all_snapshots().get(name)

    def get_all_snapshots(self) -> dict[str, TensorSnapshot]:
        """Every snapshot the store holds, by (remapped) name; read once and cached."""
        if self._snapshots is None:
            snapshots = self._read()
            if not self.remapper.is_empty():
                snapshots = _remapped(snapshots, self.remapper)
            if self.contiguous_indices:  # after remapping, as Burn does
                mapped, _ = map_indices_contiguous(list(snapshots.values()))
                snapshots = {s.full_path: s for s in mapped}
            self._snapshots = snapshots
        return self._snapshots

    # -- module side -------------------------------------------------------------------------

    def collect_from(self, module: nn.Module) -> None:
        """Save `module`'s selected tensors (through the `to` adapter) into the store."""
        self._snapshots = None
        self._write(collect(module, self.path_filter, self.to_adapter))

    def apply_to(self, module: nn.Module) -> ApplyResult:
        """Load the store into `module` in place; see `load_from`."""
        adapter = self._load_adapter(module)
        result = apply(module, self.get_all_snapshots(), self.path_filter, adapter)
        if self.validating and result.errors:
            raise RecordError(
                f"Cannot load {self.describe()} into {type(module).__name__}: "
                f"{len(result.errors)} tensor(s) do not fit:\n  "
                + "\n  ".join(map(str, result.errors[:_LISTED]))
                + "\nFix the module or the file, or pass .validate(False) to skip them."
            )
        missing = result.missing
        if converts_from_burn(adapter):  # Burn's BatchNorm has no num_batches_tracked
            missing = [m for m in missing if not burn_lacks(*(tuple(s.split(".")) for s in m))]
        if not self.partial and missing:
            lines = [path + _hint(result, path) for path, _ in missing[:_LISTED]]
            raise RecordError(
                f"{self.describe()} lacks {len(missing)} tensor(s) of "
                f"{type(module).__name__}:\n  "
                + "\n  ".join(lines)
                + "\nRemap the names (with_key_remapping), adapt the layout "
                "(with_from_adapter(BurnToPyTorchAdapter()) for files Burn wrote), or pass "
                ".allow_partial(True) to keep those tensors as they are."
            )
        return result

    # -- format hooks ------------------------------------------------------------------------

    def _load_adapter(self, module: nn.Module) -> ModuleAdapter:
        """The adapter a load into `module` goes through (Burnpack resolves the layout)."""
        return self.from_adapter

    @abstractmethod
    def describe(self) -> str:
        """The store for messages, e.g. `"BurnpackStore('model.bpk')"`."""

    @abstractmethod
    def _read(self) -> dict[str, TensorSnapshot]:
        """Every tensor the store holds, by name (lazily where the format allows)."""

    @abstractmethod
    def _write(self, snapshots: list[TensorSnapshot]) -> None:
        """Write `snapshots` (with `extra_metadata`)."""


def _adapter(adapter: object, method: str) -> ModuleAdapter:
    if isinstance(adapter, type) and issubclass(adapter, ModuleAdapter):
        return adapter()
    if not isinstance(adapter, ModuleAdapter):
        raise TypeError(
            f"`{method}` takes a ModuleAdapter (e.g. BurnToPyTorchAdapter()); received "
            f"{type(adapter).__name__}."
        )
    return adapter


def _hint(result: ApplyResult, path: str) -> str:
    """A missing tensor's hint: Burn's norm names point to the adapter, not to a lookalike."""
    head, _, name = path.rpartition(".")
    burn_name = {"weight": "gamma", "bias": "beta"}.get(name)
    if burn_name and (f"{head}.{burn_name}" if head else burn_name) in result.unused:
        return (f" (the store holds Burn's {burn_name!r}: load it with "
                ".with_from_adapter(BurnToPyTorchAdapter()))")  # fmt: skip
    close = [c for c in result.suggestions(path) if c.rpartition(".")[2] not in ("gamma", "beta")]
    return f" (did you mean {close[0]!r}?)" if close else ""


def _remapped(
    snapshots: dict[str, TensorSnapshot], remapper: KeyRemapper
) -> dict[str, TensorSnapshot]:
    result: dict[str, TensorSnapshot] = {}
    for name, snapshot in snapshots.items():
        new = remapper.remap_name(name)
        if new in result:
            raise RecordError(
                f"Key remapping maps two tensors to {new!r} (one of them {name!r}). Make the "
                "patterns more specific."
            )
        result[new] = snapshot.with_path(tuple(new.split(".")), snapshot.container_stack)
    return result

"""Adapters between Burn's and PyTorch's parameter layouts (Burn's `ModuleAdapter`s).

Burn and PyTorch differ in two places, and burn-store's adapters fix exactly those:

- `Linear.weight` is `[in, out]` in Burn and `[out, in]` in PyTorch: transposed (both ways).
- `BatchNorm`, `LayerNorm`, `GroupNorm` and `RmsNorm` name their affine parameters `gamma` and
  `beta` in Burn, `weight` and `bias` in PyTorch: renamed.

Convolutions (`[out, in/groups, *kernel]`) and `Embedding` (`[num, dim]`) have the same layout
in both and pass unchanged. burnish's modules are PyTorch modules, so: load a file laid out by
Burn with `with_from_adapter(BurnToPyTorchAdapter())`, and save a file for Burn with
`with_to_adapter(PyTorchToBurnAdapter())`.
"""

from __future__ import annotations

from burnish.record.store.snapshot import TensorSnapshot

__all__ = [
    "BurnToPyTorchAdapter",
    "ChainAdapter",
    "IdentityAdapter",
    "ModuleAdapter",
    "PyTorchToBurnAdapter",
]

LINEAR = "Struct:Linear"
NORMS = frozenset({"Struct:BatchNorm", "Struct:LayerNorm", "Struct:GroupNorm", "Struct:RmsNorm"})
_TO_BURN = {"weight": "gamma", "bias": "beta"}
_TO_PYTORCH = {"gamma": "weight", "beta": "bias"}


class ModuleAdapter:
    """Transforms snapshots on their way into or out of a module; the default changes nothing."""

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        """The snapshot as the other side lays it out."""
        return snapshot

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        """Another name to look a missing parameter up under (e.g. `gamma` for `weight`)."""
        return None

    def chain(self, next_adapter: ModuleAdapter) -> ChainAdapter:
        """This adapter, then `next_adapter`."""
        return ChainAdapter(self, next_adapter)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class IdentityAdapter(ModuleAdapter):
    """Passes every snapshot through unchanged."""


class ChainAdapter(ModuleAdapter):
    """Two adapters in sequence: `second.adapt(first.adapt(snapshot))`."""

    def __init__(self, first: ModuleAdapter, second: ModuleAdapter) -> None:
        self.first = first
        self.second = second

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        return self.second.adapt(self.first.adapt(snapshot))

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        name = self.first.get_alternative_param_name(param_name, container_type)
        if name is None:
            return self.second.get_alternative_param_name(param_name, container_type)
        return self.second.get_alternative_param_name(name, container_type) or name


class PyTorchToBurnAdapter(ModuleAdapter):
    """PyTorch layout to Burn's: transpose `Linear.weight`, norms' `weight`/`bias` to
    `gamma`/`beta`. Use it as `with_to_adapter` to write files Burn reads."""

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        return _adapt(snapshot, _TO_BURN)

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        return _TO_PYTORCH.get(param_name) if container_type in NORMS else None


class BurnToPyTorchAdapter(ModuleAdapter):
    """Burn layout to PyTorch's: transpose `Linear.weight`, norms' `gamma`/`beta` to
    `weight`/`bias`. Use it as `with_from_adapter` to load files Burn wrote."""

    def adapt(self, snapshot: TensorSnapshot) -> TensorSnapshot:
        return _adapt(snapshot, _TO_PYTORCH)

    def get_alternative_param_name(self, param_name: str, container_type: str) -> str | None:
        return _TO_BURN.get(param_name) if container_type in NORMS else None


def _adapt(snapshot: TensorSnapshot, renames: dict[str, str]) -> TensorSnapshot:
    module_type = snapshot.module_type()
    if not snapshot.path_stack or module_type is None:
        return snapshot
    name = snapshot.path_stack[-1]
    if module_type == LINEAR and name == "weight" and len(snapshot.shape) == 2:
        return _transposed(snapshot)
    if module_type in NORMS and name in renames:
        path = (*snapshot.path_stack[:-1], renames[name])
        return snapshot.with_path(path, snapshot.container_stack)
    return snapshot


def _transposed(snapshot: TensorSnapshot) -> TensorSnapshot:
    data_fn = snapshot.data_fn
    rows, cols = snapshot.shape
    return TensorSnapshot(snapshot.path_stack, snapshot.container_stack, (cols, rows),
                          snapshot.dtype, snapshot.param_id, lambda: data_fn().t(),
                          snapshot.release)  # fmt: skip

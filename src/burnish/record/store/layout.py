"""Whose layout a file holds, Burn's or PyTorch's, and the adapter that loads it.

Burn lays out `Linear.weight` as `[in, out]` and names norms' affine parameters `gamma`/`beta`;
PyTorch (and so a burnish module) uses `[out, in]` and `weight`/`bias`. A square `Linear`
weight fits either way, so a store must know which layout a file holds instead of guessing:

- burnish writes `burnish.layout` (`"burn"` or `"pytorch"`) into every Burnpack file's
  metadata: `"burn"` when the `to` adapter includes `PyTorchToBurnAdapter`.
- Burn's `BurnpackStore` writes `producer: burn`; Burn's `ModuleRecord::save` writes no
  metadata and a `param_id` on every tensor. Both are Burn's layout.
- Anything else (a file without the key from another tool, or one saved with
  `clear_metadata()` and no ids) is unknown: a load that would depend on it is refused, and
  the message names the two adapters that say which it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal

from torch import nn

from burnish.errors import RecordError
from burnish.record.store.adapter import (
    BurnToPyTorchAdapter,
    ChainAdapter,
    ModuleAdapter,
    PyTorchToBurnAdapter,
)
from burnish.record.store.traversal import module_tensors

__all__ = [
    "BURN",
    "LAYOUT_KEY",
    "PYTORCH",
    "burn_lacks",
    "converts_from_burn",
    "file_layout",
    "layout_dependent",
    "load_adapter",
    "written_layout",
]

LAYOUT_KEY = "burnish.layout"
BURN: Final = "burn"
PYTORCH: Final = "pytorch"
Layout = Literal["burn", "pytorch"]
_NORMS = ("Struct:BatchNorm", "Struct:LayerNorm", "Struct:GroupNorm", "Struct:RmsNorm")


def adapters(adapter: ModuleAdapter) -> Iterable[ModuleAdapter]:
    """`adapter` and, for a `ChainAdapter`, every adapter inside it."""
    if isinstance(adapter, ChainAdapter):
        yield from adapters(adapter.first)
        yield from adapters(adapter.second)
    else:
        yield adapter


def written_layout(to_adapter: ModuleAdapter) -> Layout:
    """The layout a save through `to_adapter` writes."""
    burn = any(isinstance(a, PyTorchToBurnAdapter) for a in adapters(to_adapter))
    return BURN if burn else PYTORCH


def file_layout(metadata: dict[str, str], param_ids: Iterable[int | None]) -> Layout | None:
    """The layout a Burnpack file holds, from its metadata (None: it does not say).

    Raises:
        RecordError: for a `burnish.layout` value other than `burn` or `pytorch`.
    """
    layout = metadata.get(LAYOUT_KEY)
    if layout is not None:
        if layout not in (BURN, PYTORCH):
            raise RecordError(
                f"Burnpack metadata `{LAYOUT_KEY}` is {layout!r}; expected 'burn' or 'pytorch'."
            )
        return BURN if layout == BURN else PYTORCH
    if metadata.get("producer") == "burn":
        return BURN  # Burn's BurnpackStore
    if "burnish.metadata" in metadata:
        return PYTORCH  # BurnpackFileRecorder's records (state_dicts) before the key existed
    ids = list(param_ids)
    if not metadata and ids and all(i is not None for i in ids):
        return BURN  # Burn's ModuleRecord::save / Module::save_file
    return None


def layout_dependent(module: nn.Module) -> list[str]:
    """The module's tensors whose name or shape differ between Burn and PyTorch."""
    paths = []
    for entry in module_tensors(module):
        kind = entry.container_stack[-1] if entry.container_stack else ""
        name = entry.path_stack[-1]
        if (kind == "Struct:Linear" and name == "weight" and entry.tensor.dim() == 2) or (
            kind in _NORMS and name in ("weight", "bias")
        ):
            paths.append(".".join(entry.path_stack))
    return paths


def load_adapter(
    layout: Layout | None,
    adapter: ModuleAdapter,
    explicit: bool,
    module: nn.Module,
    source: str,
) -> ModuleAdapter:
    """The adapter that loads a file of `layout` into the PyTorch `module`.

    Burn's layout is adapted (`BurnToPyTorchAdapter` is added unless `adapter` has it);
    PyTorch's is loaded as it is. An unknown layout loads only through an `explicit` adapter,
    or when no tensor of `module` depends on it.

    Raises:
        RecordError: when `adapter` would convert a PyTorch-layout file from Burn's layout,
            or the layout is unknown and matters.
    """
    converts = converts_from_burn(adapter)
    if layout == BURN:
        return adapter if converts else ChainAdapter(BurnToPyTorchAdapter(), adapter)
    if layout == PYTORCH:
        if converts:
            raise RecordError(
                f"{source} holds PyTorch's layout (its metadata says {LAYOUT_KEY}: pytorch), "
                "but the store converts from Burn's with BurnToPyTorchAdapter, which would "
                "transpose its Linear weights. Drop the adapter: the file loads as it is."
            )
        return adapter
    dependent = layout_dependent(module)
    if explicit or not dependent:
        return adapter
    raise RecordError(
        f"{source} does not say whose layout it holds (no `{LAYOUT_KEY}` or `producer` in its "
        f"metadata), and {type(module).__name__}'s {dependent[0]!r} loads differently from "
        "Burn's layout (Linear weights [in, out], norms' gamma/beta) and PyTorch's. Say which: "
        ".with_from_adapter(BurnToPyTorchAdapter()) for a file Burn wrote, "
        ".with_from_adapter(IdentityAdapter()) for PyTorch's layout."
    )


def burn_lacks(path_stack: tuple[str, ...], container_stack: tuple[str, ...]) -> bool:
    """Whether Burn's module has no such tensor: `BatchNorm`'s `num_batches_tracked`.

    Burn's `BatchNorm` holds `gamma`, `beta`, `running_mean` and `running_var` only, and its
    loader rejects a file tensor no module tensor takes; so a file for Burn leaves it out and
    a load from Burn's layout leaves PyTorch's counter as it is.
    """
    kind = container_stack[-1] if container_stack else ""
    name = path_stack[-1] if path_stack else ""
    return kind == "Struct:BatchNorm" and name == "num_batches_tracked"


def converts_from_burn(adapter: ModuleAdapter) -> bool:
    """Whether `adapter` (or a part of its chain) is `BurnToPyTorchAdapter`."""
    return any(isinstance(a, BurnToPyTorchAdapter) for a in adapters(adapter))

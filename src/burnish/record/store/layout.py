"""Whose layout a file holds, Burn's or PyTorch's, and the adapter that loads it.

Burn lays out `Linear.weight` as `[in, out]` and names norms' affine parameters `gamma`/`beta`;
PyTorch (and so a burnish module) uses `[out, in]` and `weight`/`bias`. A square `Linear`
weight fits either way, so a store must know which layout a file holds instead of guessing:

- burnish writes `burnish.layout` (`"burn"` or `"pytorch"`) into every Burnpack file's
  metadata: `"burn"` when the `to` adapter includes `PyTorchToBurnAdapter`.
- Burn's `BurnpackStore` and `SafetensorsStore` write `format`, `producer: burn` and `version`
  whatever adapter they saved through: a plain save is Burn's layout, one through
  `with_to_adapter(BurnToPyTorchAdapter)` PyTorch's, under the same metadata. So such a file is
  `BURN_WRITTEN` and its tensors tell (`tensors_layout`): a norm's `gamma`/`beta` is Burn's and
  its `weight`/`bias` PyTorch's; a non-square `Linear` weight `[in, out]` is Burn's and
  `[out, in]` PyTorch's; a file whose only telling tensor is a square `Linear` weight is
  refused (it fits both), and so is one that shows both layouts.
- Burn's `ModuleRecord::save` writes no metadata and a `param_id` on every tensor: Burn's
  layout.
- Anything else (a file without the key from another tool, or one saved with
  `clear_metadata()` and no ids) is unknown: a load that would depend on it is refused, and
  the message names the two adapters that say which it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, Literal

from torch import nn

from burnish.errors import RecordError
from burnish.record.store.adapter import (
    LINEAR,
    NORMS,
    BurnToPyTorchAdapter,
    ChainAdapter,
    ModuleAdapter,
    PyTorchToBurnAdapter,
)
from burnish.record.store.traversal import module_tensors

__all__ = [
    "BURN",
    "BURN_WRITTEN",
    "LAYOUT_KEY",
    "PYTORCH",
    "burn_lacks",
    "converts_from_burn",
    "file_layout",
    "layout_dependent",
    "load_adapter",
    "marked_layout",
    "tensors_layout",
    "written_layout",
]

LAYOUT_KEY = "burnish.layout"
BURN: Final = "burn"
PYTORCH: Final = "pytorch"
#: A file Burn's store wrote (`producer: burn`, no `burnish.layout`): its tensors tell.
BURN_WRITTEN: Final = "burn-written"
Layout = Literal["burn", "pytorch"]
FileLayout = Literal["burn", "pytorch", "burn-written"]
Shapes = Mapping[str, tuple[int, ...]]
_BURN_NAMES: Final = {"weight": "gamma", "bias": "beta"}


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


def marked_layout(metadata: Mapping[str, str], source: str = "Burnpack") -> Layout | None:
    """The layout a file's `burnish.layout` says (None: the file has no such key).

    Raises:
        RecordError: for a value other than `burn` or `pytorch`.
    """
    layout = metadata.get(LAYOUT_KEY)
    if layout is None:
        return None
    if layout not in (BURN, PYTORCH):
        raise RecordError(
            f"{source}'s metadata `{LAYOUT_KEY}` is {layout!r}; expected 'burn' or 'pytorch'. "
            "Fix the file's metadata, or rewrite it with burnish."
        )
    return BURN if layout == BURN else PYTORCH


def file_layout(metadata: Mapping[str, str], param_ids: Iterable[int | None]) -> FileLayout | None:
    """The layout a Burnpack file holds, from its metadata (None: it does not say).

    Raises:
        RecordError: for a `burnish.layout` value other than `burn` or `pytorch`.
    """
    marked = marked_layout(metadata)
    if marked is not None:
        return marked
    if metadata.get("producer") == "burn":
        return BURN_WRITTEN  # Burn's BurnpackStore, whatever its to-adapter: the tensors tell
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
        if (kind == LINEAR and name == "weight" and entry.tensor.dim() == 2) or (
            kind in NORMS and name in _BURN_NAMES
        ):
            paths.append(".".join(entry.path_stack))
    return paths


def load_adapter(
    layout: FileLayout | None,
    adapter: ModuleAdapter,
    explicit: bool,
    module: nn.Module,
    source: str,
    shapes: Shapes | None = None,
) -> ModuleAdapter:
    """The adapter that loads a file of `layout` (its tensor `shapes`) into the PyTorch `module`.

    Burn's layout is adapted (`BurnToPyTorchAdapter` is added unless `adapter` has it);
    PyTorch's is loaded as it is; a file Burn's store wrote as its tensors say
    (`tensors_layout`). An unknown layout, or one Burn's tensors do not tell, loads only
    through an `explicit` adapter, or when no tensor of `module` depends on it.

    Raises:
        RecordError: when `adapter` would convert a PyTorch-layout file from Burn's layout,
            or the layout is unknown (or told both ways) and matters.
    """
    if layout == BURN_WRITTEN:
        if explicit:
            return adapter  # the caller said which
        layout = tensors_layout(module, shapes or {}, source)
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


def tensors_layout(module: nn.Module, shapes: Shapes, source: str) -> Layout:
    """The layout of a file Burn's store wrote, as its tensors tell against `module`.

    Returns:
        `BURN` or `PYTORCH` (also when no tensor of `module` depends on the layout).

    Raises:
        RecordError: when the tensors show both layouts, or tell nothing while the file holds
            a square `Linear` weight of `module` (it fits both ways).
    """
    seen, square = burn_evidence(module, shapes)
    if BURN in seen and PYTORCH in seen:
        raise RecordError(
            f"{source} was written by Burn and holds both layouts: {seen[BURN]!r} is Burn's, "
            f"{seen[PYTORCH]!r} PyTorch's. Say which to load it with: "
            ".with_from_adapter(BurnToPyTorchAdapter()) or .with_from_adapter(IdentityAdapter())."
        )
    if seen:
        return BURN if BURN in seen else PYTORCH
    if not square:
        return PYTORCH  # nothing depends on the layout: the file loads as it is
    raise RecordError(
        f"{source} was written by Burn (`producer: burn`), whose metadata does not say the "
        "layout: Burn's stores save Burn's layout (Linear weights [in, out]), or PyTorch's "
        "through with_to_adapter(BurnToPyTorchAdapter), under the same metadata. Its tensors "
        f"do not tell either: {type(module).__name__}'s {square[0]!r} is a square Linear "
        "weight, which fits both ways. Say which, on the file's store: "
        ".with_from_adapter(BurnToPyTorchAdapter()) for Burn's plain save, "
        ".with_from_adapter(IdentityAdapter()) for a file Burn saved for PyTorch."
    )


def burn_evidence(module: nn.Module, shapes: Shapes) -> tuple[dict[Layout, str], list[str]]:
    """What a file's tensors (their `shapes`) say about its layout, against `module`.

    Returns:
        The layouts the tensors show, each with the first file tensor that shows it, and the
        module's square `Linear` weights the file holds (they fit either layout).
    """
    seen: dict[Layout, str] = {}
    square: list[str] = []
    for entry in module_tensors(module):
        kind = entry.container_stack[-1] if entry.container_stack else ""
        path = ".".join(entry.path_stack)
        head, _, name = path.rpartition(".")
        if kind == LINEAR and name == "weight" and entry.tensor.dim() == 2 and path in shapes:
            out_features, in_features = entry.tensor.shape
            if out_features == in_features:
                square.append(path)
            elif tuple(shapes[path]) == (in_features, out_features):
                seen.setdefault(BURN, path)
            elif tuple(shapes[path]) == (out_features, in_features):
                seen.setdefault(PYTORCH, path)
        elif kind in NORMS and name in _BURN_NAMES:
            burn_path = f"{head}.{_BURN_NAMES[name]}" if head else _BURN_NAMES[name]
            if burn_path in shapes:
                seen.setdefault(BURN, burn_path)
            elif path in shapes:
                seen.setdefault(PYTORCH, path)
    return seen, square


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

"""Whose layout a safetensors file holds, and the adapter that loads it (see `layout`).

- burnish's `SafetensorsStore` writes `burnish.layout` (`"burn"` or `"pytorch"`) into the
  header's `__metadata__`, as its Burnpack files do: the file says, and the store follows it.
- Burn's `SafetensorsStore` writes `format: safetensors`, `producer: burn` and its version,
  whatever adapter it saved through: its plain save is Burn's layout, but Burn's book exports
  "for PyTorch" with `with_to_adapter(BurnToPyTorchAdapter)` under the same metadata. So
  `producer: burn` says who wrote the file, not whose layout it holds, and the tensors decide
  where they can: a norm's `gamma`/`beta` is Burn's and its `weight`/`bias` PyTorch's; a
  non-square `Linear` weight of shape `[in, out]` is Burn's and `[out, in]` PyTorch's. A
  square `Linear` weight fits both, so a file with nothing else to tell by is refused when
  the module has one (the message names the two adapters that say which).
- Every other file (`safetensors.torch.save_file(model.state_dict())`, Hugging Face models,
  older burnish files) is PyTorch's layout and loads as it is, with whatever adapter is set:
  the common case keeps working without a word.
"""

from __future__ import annotations

from typing import Final

from torch import nn

from burnish.errors import RecordError
from burnish.record.store.adapter import LINEAR, NORMS, ModuleAdapter
from burnish.record.store.layout import BURN, LAYOUT_KEY, PYTORCH, Layout, load_adapter
from burnish.record.store.traversal import module_tensors

__all__ = ["burn_evidence", "safetensors_load_adapter"]

BURN_NAMES: Final = {"weight": "gamma", "bias": "beta"}


def safetensors_load_adapter(
    metadata: dict[str, str],
    shapes: dict[str, tuple[int, ...]],
    adapter: ModuleAdapter,
    explicit: bool,
    module: nn.Module,
    source: str,
) -> ModuleAdapter:
    """The adapter that loads a safetensors file (its `__metadata__`, tensor `shapes`).

    Raises:
        RecordError: for a `burnish.layout` other than `burn`/`pytorch`, a contradiction
            with it (see `layout.load_adapter`), or a file Burn wrote whose layout its tensors
            do not tell (or tell both ways) while the module depends on it.
    """
    marked = metadata.get(LAYOUT_KEY)
    if marked is not None:
        if marked not in (BURN, PYTORCH):
            raise RecordError(
                f"{source}'s metadata `{LAYOUT_KEY}` is {marked!r}; expected 'burn' or "
                "'pytorch'. Fix the file's `__metadata__`, or rewrite it with burnish."
            )
        layout: Layout = BURN if marked == BURN else PYTORCH
        return load_adapter(layout, adapter, explicit, module, source)
    if metadata.get("producer") != "burn" or explicit:
        return adapter  # PyTorch's layout, or the caller said which
    seen, square = burn_evidence(module, shapes)
    if BURN in seen and PYTORCH in seen:
        raise RecordError(
            f"{source} was written by Burn and holds both layouts: {seen[BURN]!r} is Burn's, "
            f"{seen[PYTORCH]!r} PyTorch's. Say which to load it with: "
            ".with_from_adapter(BurnToPyTorchAdapter()) or .with_from_adapter(IdentityAdapter())."
        )
    if BURN in seen:
        return load_adapter(BURN, adapter, explicit, module, source)
    if PYTORCH in seen or not square:
        return adapter
    raise RecordError(
        f"{source} was written by Burn (`producer: burn`), whose metadata does not say the "
        "layout: Burn's SafetensorsStore saves Burn's layout (Linear weights [in, out]), or "
        "PyTorch's through with_to_adapter(BurnToPyTorchAdapter), under the same metadata. "
        f"Its tensors do not tell either: {type(module).__name__}'s {square[0]!r} is a square "
        "Linear weight, which fits both ways. Say which: "
        ".with_from_adapter(BurnToPyTorchAdapter()) for Burn's plain save, "
        ".with_from_adapter(IdentityAdapter()) for a file Burn saved for PyTorch."
    )


def burn_evidence(
    module: nn.Module, shapes: dict[str, tuple[int, ...]]
) -> tuple[dict[Layout, str], list[str]]:
    """What the file's tensors say about its layout, against `module`.

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
        elif kind in NORMS and name in BURN_NAMES:
            burn_path = f"{head}.{BURN_NAMES[name]}" if head else BURN_NAMES[name]
            if burn_path in shapes:
                seen.setdefault(BURN, burn_path)
            elif path in shapes:
                seen.setdefault(PYTORCH, path)
    return seen, square

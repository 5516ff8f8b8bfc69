"""Whose layout a safetensors file holds, and the adapter that loads it (see `layout`).

- burnish's `SafetensorsStore` writes `burnish.layout` (`"burn"` or `"pytorch"`) into the
  header's `__metadata__`, as its Burnpack files do: the file says, and the store follows it.
- Burn's `SafetensorsStore` writes `format: safetensors`, `producer: burn` and its version,
  whatever adapter it saved through, so its files are told by their tensors, by the rule
  Burnpack files follow (`layout.tensors_layout`): refused when only a square `Linear` could
  tell (the message names the two adapters that say which).
- Every other file (`safetensors.torch.save_file(model.state_dict())`, Hugging Face models,
  older burnish files) is PyTorch's layout and loads as it is, with whatever adapter is set:
  the common case keeps working without a word.
"""

from __future__ import annotations

from torch import nn

from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.layout import (
    BURN_WRITTEN,
    FileLayout,
    Shapes,
    load_adapter,
    marked_layout,
)

__all__ = ["safetensors_load_adapter"]


def safetensors_load_adapter(
    metadata: dict[str, str],
    shapes: Shapes,
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
    layout: FileLayout | None = marked_layout(metadata, source)
    if layout is None:
        if metadata.get("producer") != "burn":
            return adapter  # PyTorch's layout, with whatever adapter the caller set
        layout = BURN_WRITTEN
    return load_adapter(layout, adapter, explicit, module, source, shapes)

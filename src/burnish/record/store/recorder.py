"""`BurnpackFileRecorder`: any record (a checkpoint's model, optimizer, scheduler, learner
state) as a Burnpack file, so the Learner's checkpoints can be Burnpack
(`with_default_checkpointers()`).

Tensors are stored under their flat record paths, in PyTorch's layout (the record is a
`state_dict`: Linear weights `[out, in]`, norms' `weight`/`bias`, BatchNorm's
`num_batches_tracked`, ints at the record settings' precision): a file for burnish, not for
Burn, and its metadata says so (`burnish.layout: pytorch`), so `BurnpackStore` loads it as it
is. For a file Burn loads, use `ModuleRecord.save` or a store with `PyTorchToBurnAdapter`.

A Burnpack file another writer made loads by the stores' layout rule (`layout.file_layout`):
Burn's files come back as a `ModuleRecord` (in Burn's layout for `ModuleRecord::save`'s: no
metadata and a `param_id` on every tensor; told by its tensors on load for `BurnpackStore`'s,
`producer: burn`, which it writes whatever its to-adapter), so
`model.load_file(path, BurnpackFileRecorder())` adapts it as
`load_from(model, BurnpackStore.from_file(path))` does; a file that does not say its layout
comes back as one of unknown layout (refused where a module's tensors depend on it); a
PyTorch-layout file as a plain dict. The layout travels in the record type the file's metadata
reports (`burnish inspect` shows it, `burnish convert` keeps it).

burnish's record metadata and, for nested records, the structure with every non-tensor value
go into the Burnpack string metadata as JSON (`burnish.metadata`, `burnish.structure`), as
`SafetensorsFileRecorder` does in `__metadata__`; Burnpack files written by Burn load as a flat
`{name: tensor}` dict.
"""

from __future__ import annotations

import json
from typing import Any

import torch

from burnish._version import __version__
from burnish.errors import RecordError
from burnish.record.base import FileRecorder, RecordMetadata
from burnish.record.formats import json as json_format
from burnish.record.formats import safetensors as safetensors_format
from burnish.record.formats.tensor import TensorLeaf
from burnish.record.store import burnpack
from burnish.record.store.layout import (
    BURN,
    BURN_WRITTEN,
    LAYOUT_KEY,
    PYTORCH,
    FileLayout,
    file_layout,
)
from burnish.record.store.module_record import ModuleRecord

__all__ = ["BurnpackFileRecorder"]

METADATA_KEY = "burnish.metadata"
STRUCTURE_KEY = "burnish.structure"
#: The record type of a file holding a module in Burn's layout, or in a layout it does not say.
BURN_LAYOUT_RECORD = "module (Burn's layout)"
UNKNOWN_LAYOUT_RECORD = "module (layout not said)"
#: A file Burn's BurnpackStore wrote (`producer: burn`): its tensors tell the layout.
BURN_WRITTEN_RECORD = "module (Burn's store: layout told by its tensors)"
_LAYOUTS: dict[str, FileLayout | None] = {
    BURN_LAYOUT_RECORD: BURN,
    UNKNOWN_LAYOUT_RECORD: None,
    BURN_WRITTEN_RECORD: BURN_WRITTEN,
}
_RECORD_TYPES = {layout: kind for kind, layout in _LAYOUTS.items()}


class BurnpackFileRecorder(FileRecorder):
    """Records as Burnpack files (`.bpk`): Burn main's native format.

    Example:
        >>> import torch
        >>> from burnish.record import BurnpackFileRecorder
        >>> path = BurnpackFileRecorder().record({"step": 3, "w": torch.ones(2)}, "/tmp/state")
        >>> path.name
        'state.bpk'
        >>> BurnpackFileRecorder().load(path)["step"]
        3
    """

    file_extension = "bpk"
    format = "burnish.burnpack"
    kind = "Burnpack"

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        return b"".join(bytes(chunk) for chunk in self._encode_chunks(envelope))

    def _encode_chunks(self, envelope: dict[str, Any]) -> list[Any]:
        leaves: dict[str, TensorLeaf] = {}
        layout = _LAYOUTS.get(envelope["metadata"].get("record_type"), PYTORCH)  # converted
        structure = safetensors_format._skeleton(envelope["item"], "", leaves)
        metadata = {"format": "burnpack", "producer": "burnish", "version": __version__}
        if layout == BURN_WRITTEN:  # Burn's store's tensors: still for them to tell
            metadata["producer"] = "burn"
        else:
            metadata[LAYOUT_KEY] = BURN if layout == BURN else PYTORCH
        metadata[METADATA_KEY] = json.dumps(envelope["metadata"])
        flat = isinstance(structure, dict) and all(
            isinstance(v, dict) and v.get("$ref") == k and len(v) == 1 for k, v in structure.items()
        )
        if not flat or any(leaf.source_dtype != leaf.data.dtype for leaf in leaves.values()):
            metadata[STRUCTURE_KEY] = json_format.encode(
                {"metadata": {}, "item": structure}
            ).decode()
        tensors = [burnpack.PackTensor.of(name, leaf.data) for name, leaf in leaves.items()]
        return list(burnpack.encode_chunks(tensors, metadata))

    def _decode(self, data: bytearray) -> Any:
        reader = burnpack.PackReader.from_buffer(data)
        tensors = {name: TensorLeaf(reader.tensor(name), burnpack.DTYPES[d.dtype])
                   for name, d in reader.descriptors.items()}  # fmt: skip
        if METADATA_KEY not in reader.metadata:
            ids = (d.param_id for d in reader.descriptors.values())
            return {"metadata": {}, "item": tensors, "layout": file_layout(reader.metadata, ids)}
        metadata = _json(reader.metadata, METADATA_KEY)
        if STRUCTURE_KEY not in reader.metadata:
            return {"metadata": metadata, "item": tensors}
        structure = json_format.decode(reader.metadata[STRUCTURE_KEY].encode())
        if not isinstance(structure, dict) or "item" not in structure:
            raise RecordError(f"Burnpack metadata `{STRUCTURE_KEY}` is not a record structure.")
        return {"metadata": metadata,
                "item": safetensors_format._rebuild(structure["item"], tensors, "", 0)}  # fmt: skip

    def _check_envelope(self, envelope: Any) -> RecordMetadata:
        if envelope["metadata"] == {}:  # a file Burn (or BurnpackStore) wrote
            layout = envelope.get("layout", PYTORCH)
            kind = None if layout == PYTORCH else _RECORD_TYPES[layout]
            return RecordMetadata(format="burnpack", format_version=0, float="", int="",
                                  settings="", version="", record_type=kind)  # fmt: skip
        return super()._check_envelope(envelope)

    def _loaded(self, metadata: RecordMetadata, record: Any) -> Any:
        """A module in Burn's (or an unsaid) layout as a `ModuleRecord` that adapts it."""
        kind = metadata.record_type or ""
        if kind not in _LAYOUTS or not isinstance(record, dict):
            return record
        if not all(isinstance(value, torch.Tensor) for value in record.values()):
            return record
        return ModuleRecord(record, _LAYOUTS[kind])


def _json(metadata: dict[str, str], key: str) -> Any:
    try:
        return json.loads(metadata[key])
    except (TypeError, ValueError, RecursionError):
        raise RecordError(f"Burnpack metadata `{key}` is not valid JSON.") from None

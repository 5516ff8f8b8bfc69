"""`BurnpackFileRecorder`: any record (a checkpoint's model, optimizer, scheduler, learner
state) as a Burnpack file, so the Learner's checkpoints can be Burnpack
(`with_default_checkpointers()`).

Tensors are stored under their flat record paths, in PyTorch's layout (the record is a
`state_dict`: Linear weights `[out, in]`, norms' `weight`/`bias`, BatchNorm's
`num_batches_tracked`, ints at the record settings' precision): a file for burnish, not for
Burn, and its metadata says so (`burnish.layout: pytorch`), so `BurnpackStore` loads it as it
is. For a file Burn loads, use `ModuleRecord.save` or a store with `PyTorchToBurnAdapter`.

burnish's record metadata and, for nested records, the structure with every non-tensor value
go into the Burnpack string metadata as JSON (`burnish.metadata`, `burnish.structure`), as
`SafetensorsFileRecorder` does in `__metadata__`; Burnpack files written by Burn load as a flat
`{name: tensor}` dict.
"""

from __future__ import annotations

import json
from typing import Any

from burnish._version import __version__
from burnish.errors import RecordError
from burnish.record.base import FileRecorder, RecordMetadata
from burnish.record.formats import json as json_format
from burnish.record.formats import safetensors as safetensors_format
from burnish.record.formats.tensor import TensorLeaf
from burnish.record.store import burnpack
from burnish.record.store.layout import LAYOUT_KEY, PYTORCH

__all__ = ["BurnpackFileRecorder"]

METADATA_KEY = "burnish.metadata"
STRUCTURE_KEY = "burnish.structure"


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
        structure = safetensors_format._skeleton(envelope["item"], "", leaves)
        metadata = {
            "format": "burnpack",
            "producer": "burnish",
            "version": __version__,
            LAYOUT_KEY: PYTORCH,
            METADATA_KEY: json.dumps(envelope["metadata"]),
        }
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
            return {"metadata": {}, "item": tensors}
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
            return RecordMetadata(format="burnpack", format_version=0, float="", int="",
                                  settings="", version="", record_type=None)  # fmt: skip
        return super()._check_envelope(envelope)


def _json(metadata: dict[str, str], key: str) -> Any:
    try:
        return json.loads(metadata[key])
    except (TypeError, ValueError, RecursionError):
        raise RecordError(f"Burnpack metadata `{key}` is not valid JSON.") from None

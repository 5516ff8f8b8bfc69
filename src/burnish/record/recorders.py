"""The file recorders of Burn (`NamedMpkFileRecorder`, `BinFileRecorder`, ...) and their aliases.

| recorder                  | format               | extension     | default settings |
|---------------------------|----------------------|---------------|------------------|
| `CompactRecorder`         | named MessagePack    | `mpk`         | half             |
| `DefaultRecorder`         | named MessagePack    | `mpk`         | full             |
| `NamedMpkFileRecorder`    | named MessagePack    | `mpk`         | given (full)     |
| `NamedMpkGzFileRecorder`  | MessagePack + gzip   | `mpk.gz`      | given (full)     |
| `BinFileRecorder`         | binary (raw tensors) | `bin`         | given (full)     |
| `BinGzFileRecorder`       | binary + gzip        | `bin.gz`      | given (full)     |
| `SensitiveCompactRecorder`| binary + gzip        | `bin.gz`      | half             |
| `PrettyJsonFileRecorder`  | indented JSON        | `json`        | given (full)     |
| `JsonGzFileRecorder`      | compact JSON + gzip  | `json.gz`     | given (full)     |
| `SafetensorsFileRecorder` | safetensors          | `safetensors` | given (full)     |
| `PyTorchFileRecorder`     | `torch.save` (import)| `pt`          | load only        |
"""

from __future__ import annotations

import os
from typing import Any

import torch

from burnish.errors import RecordError
from burnish.record.base import FileRecorder, ProgressCallback, RecordMetadata, _read_all
from burnish.record.formats import bin as bin_format
from burnish.record.formats import json as json_format
from burnish.record.formats import mpk as mpk_format
from burnish.record.formats import pytorch as pytorch_format
from burnish.record.formats import safetensors as safetensors_format
from burnish.record.load_args import LoadArgs, remap_keys, select_top_level
from burnish.record.settings import FullPrecisionSettings, HalfPrecisionSettings
from burnish.record.tree import check_tree, flatten, prepare, restore

__all__ = [
    "BinFileRecorder",
    "BinGzFileRecorder",
    "CompactRecorder",
    "DefaultRecorder",
    "JsonGzFileRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkGzFileRecorder",
    "PrettyJsonFileRecorder",
    "PyTorchFileRecorder",
    "SafetensorsFileRecorder",
    "SensitiveCompactRecorder",
]


class NamedMpkFileRecorder(FileRecorder):
    """Named MessagePack: self-describing, compact, fast (Burn's default format).

    Any record (nested dicts and lists of tensors, numbers, strings) can be saved, not only a
    module's; tensors come back in the dtype they were saved from, rounded through the stored
    precision.

    Args:
        settings: the stored precision (`FullPrecisionSettings`, the default,
            `HalfPrecisionSettings` or `DoublePrecisionSettings`), an instance or a class.

    Example:
        >>> import torch
        >>> from burnish.record import HalfPrecisionSettings, NamedMpkFileRecorder
        >>> recorder = NamedMpkFileRecorder(HalfPrecisionSettings())
        >>> record = {"step": 3, "weights": [torch.ones(2), torch.zeros(2, dtype=torch.float64)]}
        >>> recorder.record(record, "artifacts/state")  # the extension is added
        PosixPath('artifacts/state.mpk')
        >>> loaded = recorder.load("artifacts/state")
        >>> loaded["step"], loaded["weights"][1].dtype  # float64, stored as float16
        (3, torch.float64)
        >>> recorder.load_metadata("artifacts/state.mpk").settings
        'HalfPrecisionSettings'
    """

    file_extension = "mpk"
    format = "burnish.mpk"
    kind = "MessagePack"

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        return mpk_format.encode(envelope)

    def _encode_chunks(self, envelope: dict[str, Any]) -> list[Any]:
        return mpk_format.encode_chunks(envelope)

    def _decode(self, data: bytearray) -> Any:
        return mpk_format.decode(data)


class NamedMpkGzFileRecorder(NamedMpkFileRecorder):
    """Named MessagePack compressed with gzip."""

    file_extension = "mpk.gz"
    compressed = True


class CompactRecorder(NamedMpkFileRecorder):
    """Named MessagePack at half precision (Burn's `CompactRecorder`): half the size.

    Example:
        Save a trained model and load it into a fresh one (Burn: `model.save_file(path,
        &recorder)`, `model.load_file(path, &recorder, &device)`):

        >>> import torch
        >>> import burnish as bn
        >>> from burnish.record import CompactRecorder
        >>> model = torch.nn.Linear(3, 2)
        >>> bn.save_file(model, "artifacts/model", CompactRecorder())
        PosixPath('artifacts/model.mpk')
        >>> fresh = bn.load_file(torch.nn.Linear(3, 2), "artifacts/model", CompactRecorder())
        >>> torch.allclose(fresh.weight, model.weight, atol=1e-3), fresh.weight.dtype
        (True, torch.float32)

        A `bn.Module` has the same as methods: `model.save_file(path, recorder)`.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(HalfPrecisionSettings(), **kwargs)


class DefaultRecorder(NamedMpkFileRecorder):
    """Named MessagePack at full precision (Burn's `DefaultRecorder`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(FullPrecisionSettings(), **kwargs)


class BinFileRecorder(FileRecorder):
    """Binary: a magic, a MessagePack header, then 64-byte-aligned raw tensors.

    The fastest format to load: the file is read once and tensors are views into it.
    """

    file_extension = "bin"
    format = "burnish.bin"
    kind = "burnish binary"

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        return bin_format.encode(envelope)

    def _encode_chunks(self, envelope: dict[str, Any]) -> list[Any]:
        return bin_format.encode_chunks(envelope)

    def _decode(self, data: bytearray) -> Any:
        return bin_format.decode(data)


class BinGzFileRecorder(BinFileRecorder):
    """Binary compressed with gzip."""

    file_extension = "bin.gz"
    compressed = True


class SensitiveCompactRecorder(BinGzFileRecorder):
    """Binary + gzip at half precision: the smallest files (Burn's `SensitiveCompactRecorder`)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(HalfPrecisionSettings(), **kwargs)


class PrettyJsonFileRecorder(FileRecorder):
    """Indented JSON, for reading and diffing records; tensors as lists of numbers."""

    file_extension = "json"
    format = "burnish.json"
    kind = "JSON"
    indent: int | None = 2

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        return json_format.encode(envelope, indent=self.indent)

    def _decode(self, data: bytearray) -> Any:
        return json_format.decode(data)


class JsonGzFileRecorder(PrettyJsonFileRecorder):
    """Compact JSON compressed with gzip."""

    file_extension = "json.gz"
    compressed = True
    indent = None


class SafetensorsFileRecorder(FileRecorder):
    """Safetensors: what the rest of the ecosystem reads; also imports other tools' files.

    Tensors are stored under their flat record paths, so `safetensors.torch.load_file` reads
    a module's file as its `state_dict`. Nested records round-trip exactly. `load` also takes
    a `LoadArgs` to import a foreign file with key remapping; such files (and burnish files
    loaded with remapping) come back as a flat `{name: tensor}` dict.

    Example:
        >>> import torch
        >>> import burnish as bn
        >>> from safetensors.torch import load_file
        >>> from burnish.record import SafetensorsFileRecorder
        >>> model = torch.nn.Linear(3, 2)
        >>> path = bn.save_file(model, "artifacts/linear", SafetensorsFileRecorder())
        >>> sorted(load_file(path))  # the state_dict, for any safetensors reader
        ['bias', 'weight']
        >>> model = bn.load_file(model, path, SafetensorsFileRecorder())
    """

    file_extension = "safetensors"
    format = "burnish.safetensors"
    kind = "safetensors"

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        return safetensors_format.encode(envelope)

    def _encode_chunks(self, envelope: dict[str, Any]) -> list[Any]:
        return safetensors_format.encode_chunks(envelope)

    def _decode(self, data: bytearray) -> Any:
        return safetensors_format.decode(data)

    def _check_envelope(self, envelope: Any) -> RecordMetadata:
        if envelope["metadata"] == {}:
            return _foreign_metadata()
        return super()._check_envelope(envelope)

    def load(
        self,
        path: str | os.PathLike | LoadArgs,
        device: torch.device | str | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> Any:
        """Load a safetensors file; with `LoadArgs`, select a top-level key and remap keys."""
        if not isinstance(path, LoadArgs):
            return super().load(path, device, progress=progress)
        record = super().load(path.path, device, progress=progress)
        record = select_top_level(record, path.top_level_key, path.path)
        return remap_keys(flatten(record), path.key_remap) if path.key_remap else record


class PyTorchFileRecorder(FileRecorder):
    """Import a PyTorch `.pt`/`.pth` file (Burn's `PyTorchFileRecorder`); load only.

    The file is read with `torch.load(weights_only=True)`: only tensors and plain containers
    load, no code runs. The result is flattened to `{name: tensor}` (a `state_dict`).
    Tensors keep the file's dtypes; `load_record` casts them to the module's.

    Example:
        A checkpoint saved by a PyTorch script, its weights under `"model"` with DDP's
        `module.` prefix:

        >>> import torch
        >>> import burnish as bn
        >>> from burnish.record import LoadArgs, PyTorchFileRecorder
        >>> model = torch.nn.Linear(3, 2)
        >>> state = {f"module.{k}": v for k, v in model.state_dict().items()}
        >>> torch.save({"model": state, "epoch": 7}, "artifacts/checkpoint.pt")
        >>> args = (LoadArgs("artifacts/checkpoint.pt")
        ...         .with_top_level_key("model")
        ...         .with_key_remap(r"^module\\.", ""))
        >>> record = PyTorchFileRecorder().load(args)
        >>> sorted(record)
        ['bias', 'weight']
        >>> model = bn.load_record(torch.nn.Linear(3, 2), record)
    """

    file_extension = "pt"
    format = "pytorch"
    kind = "PyTorch zip"

    def record(self, record: Any, path: str | os.PathLike, **kwargs: Any) -> Any:
        """Not supported: export with `SafetensorsFileRecorder` (or any burnish recorder)."""
        raise RecordError(
            "PyTorchFileRecorder only imports files. To export for PyTorch tools, use "
            "SafetensorsFileRecorder (safetensors.torch.load_file reads it)."
        )

    def load(
        self,
        path: str | os.PathLike | LoadArgs,
        device: torch.device | str | None = None,
        *,
        progress: ProgressCallback | None = None,
    ) -> Any:
        """Load a state_dict-like object; `LoadArgs` selects a top-level key and remaps keys."""
        return restore(self._load_flat(path, progress), device)

    def load_stored(
        self, path: str | os.PathLike, *, progress: ProgressCallback | None = None
    ) -> tuple[RecordMetadata, Any]:
        """`RecordMetadata(format="pytorch")` and the flat record (tensors as `TensorLeaf`s)."""
        return _foreign_metadata(self.format), self._load_flat(path, progress)

    def _load_flat(
        self, path: str | os.PathLike | LoadArgs, progress: ProgressCallback | None
    ) -> Any:
        args = path if isinstance(path, LoadArgs) else LoadArgs(path)
        source = self.existing_path(args.path)
        with self._errors_about(source):
            data = _read_all(source, progress)
            self._expect(bytes(data[:16]), self.kind, data)
            obj = select_top_level(pytorch_format.decode(data), args.top_level_key, source)
            tree = prepare(obj, None)
            check_tree(tree)
            flat = flatten(tree) if isinstance(tree, dict) else tree
            if isinstance(flat, dict):
                flat = remap_keys(flat, args.key_remap)
            return flat

    def _encode(self, envelope: dict[str, Any]) -> bytes:
        raise NotImplementedError

    def _decode(self, data: bytearray) -> Any:
        raise NotImplementedError


def _foreign_metadata(format: str = "foreign") -> RecordMetadata:
    """The metadata of a file another tool wrote: only its format is known."""
    return RecordMetadata(
        format=format, format_version=0, float="", int="", settings="", version="",
        record_type=None,
    )  # fmt: skip

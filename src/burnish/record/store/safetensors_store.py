"""`SafetensorsStore`: Hugging Face's safetensors files, memory-mapped on load.

Files are the standard layout (what `safetensors.torch.load_file` reads), the store's metadata
in `__metadata__`, with `burnish.layout` (`burn` through `PyTorchToBurnAdapter`, else
`pytorch`), which `clear_metadata()` keeps. Loading maps the file, checks the header as
strictly as the library does (burnish's safetensors reader) and resolves the layout as
`safetensors_layout` says: a marked file as marked, Burn's files by their tensors, every other
file as PyTorch's.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from pathlib import Path

from torch import nn

from burnish._version import __version__
from burnish.errors import RecordError
from burnish.io import atomic_open
from burnish.record.formats import safetensors as safetensors_format
from burnish.record.formats.tensor import tensor_view
from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.base import ModuleStore
from burnish.record.store.layout import LAYOUT_KEY, written_layout
from burnish.record.store.safetensors_layout import safetensors_load_adapter
from burnish.record.store.snapshot import TensorSnapshot

__all__ = ["SafetensorsStore"]


class SafetensorsStore(ModuleStore):
    """A safetensors file (or bytes): any tool's files load, saved files load anywhere."""

    def __init__(self, path: Path | None, data: bytes | bytearray | None = None) -> None:
        super().__init__()
        self.path = path
        self.data = data
        self.extra_metadata = self.default_metadata()
        self.file_metadata: dict[str, str] = {}  # the loaded file's `__metadata__`, once read

    @staticmethod
    def default_metadata() -> dict[str, str]:
        """What every file says about itself: format, producer and version."""
        return {"format": "safetensors", "producer": "burnish", "version": __version__}

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> SafetensorsStore:
        """A store on the file at `path` (used as given)."""
        return cls(Path(path))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | None = None) -> SafetensorsStore:
        """A store on bytes in memory (None: an empty one to save into; see `get_bytes`)."""
        return cls(None, data)

    def get_bytes(self) -> bytes:
        """The file a `from_bytes` store holds (after a save, the saved one)."""
        if self.data is None:
            raise RecordError("This SafetensorsStore holds no bytes: save a module into it first.")
        return bytes(self.data)

    def describe(self) -> str:
        return f"SafetensorsStore({str(self.path) if self.path else '<bytes>'!r})"

    def _read(self) -> dict[str, TensorSnapshot]:
        buffer = self._buffer()
        header, start = safetensors_format._header(buffer)  # type: ignore[arg-type]
        metadata = header.pop("__metadata__", None) or {}
        if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
            raise RecordError(
                f"{self.describe()}: `__metadata__` is not a map of strings: the file is corrupt."
            )
        self.file_metadata = metadata
        leaves = safetensors_format._tensors(header, buffer, start)  # type: ignore[arg-type]
        return {name: TensorSnapshot.from_tensor(name, leaf.data) for name, leaf in leaves.items()}

    def _load_adapter(self, module: nn.Module) -> ModuleAdapter:
        """A marked file's layout, Burn's by its tensors, else PyTorch's (`safetensors_layout`)."""
        shapes = {name: tuple(s.shape) for name, s in self.get_all_snapshots().items()}
        explicit = self.explicit_from_adapter
        return safetensors_load_adapter(
            self.file_metadata, shapes, self.from_adapter, explicit, module, self.describe()
        )

    def _buffer(self) -> bytearray | mmap.mmap:
        if self.path is None:
            if self.data is None:
                raise RecordError("This SafetensorsStore holds no bytes to load from.")
            return bytearray(self.data)
        if not self.path.is_file():
            raise RecordError(f"No safetensors file at {str(self.path)!r}. Check the path.")
        with open(self.path, "rb") as file:
            if os.fstat(file.fileno()).st_size < 8:
                return bytearray(file.read())
            return mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)

    def _write(self, snapshots: list[TensorSnapshot]) -> None:
        metadata = {**self.extra_metadata, LAYOUT_KEY: written_layout(self.to_adapter)}
        chunks = _chunks(snapshots, metadata)
        if self.path is None:
            self.data = b"".join(bytes(chunk) for chunk in chunks)
            return
        if self.path.exists() and not self.overwriting:
            raise RecordError(
                f"File already exists: {str(self.path)!r}. Use .overwrite(True) to overwrite."
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(self.path) as file:
            for chunk in chunks:
                file.write(chunk)


def _chunks(snapshots: list[TensorSnapshot], metadata: dict[str, str]) -> list[bytes | memoryview]:
    """Length, JSON header, tensors: the library's order (dtype rank, then name)."""
    by_name = {}
    for snapshot in snapshots:
        if snapshot.dtype not in safetensors_format._ST_NAMES:
            raise RecordError(
                f"Safetensors cannot hold {snapshot.full_path!r} of dtype {snapshot.dtype}."
            )
        by_name[snapshot.full_path] = snapshot
    order = sorted(by_name, key=lambda n: (-safetensors_format._ST_RANK[by_name[n].dtype], n))
    header: dict[str, object] = {"__metadata__": metadata} if metadata else {}
    offset = 0
    for name in order:
        snapshot = by_name[name]
        end = offset + math.prod(snapshot.shape) * snapshot.dtype.itemsize
        header[name] = {"dtype": safetensors_format._ST_NAMES[snapshot.dtype],
                        "shape": list(snapshot.shape), "data_offsets": [offset, end]}  # fmt: skip
        offset = end
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * (-len(text) % 8)
    views = (tensor_view(by_name[n].to_data().detach().to("cpu").contiguous()) for n in order)
    return [struct.pack("<Q", len(text)), text, *views]

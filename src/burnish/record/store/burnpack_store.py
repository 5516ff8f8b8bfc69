"""`BurnpackStore`: Burn's native `.bpk` files (see `burnpack` for the layout)."""

from __future__ import annotations

import os
from pathlib import Path

from torch import nn

from burnish._version import __version__
from burnish.errors import RecordError
from burnish.io import atomic_open
from burnish.record.store import burnpack
from burnish.record.store.adapter import ModuleAdapter
from burnish.record.store.base import ModuleStore
from burnish.record.store.layout import (
    LAYOUT_KEY,
    FileLayout,
    file_layout,
    load_adapter,
    written_layout,
)
from burnish.record.store.snapshot import TensorSnapshot

__all__ = ["BurnpackStore"]


class BurnpackStore(ModuleStore):
    """A Burnpack file: CBOR metadata, 256-byte aligned tensors, memory-mapped loading.

    Example:
        >>> import torch
        >>> from burnish.record import BurnpackStore, load_from, save_into
        >>> model = torch.nn.Linear(3, 2)
        >>> save_into(model, BurnpackStore.from_file("artifacts/linear").overwrite(True))
        >>> result = load_from(torch.nn.Linear(3, 2), BurnpackStore.from_file("artifacts/linear"))
        >>> result.applied
        ['weight', 'bias']
    """

    def __init__(self, path: Path | None, data: bytes | bytearray | None = None) -> None:
        super().__init__()
        self.path = path
        self.data = data
        self.auto_extension_enabled = True
        self.extra_metadata = self.default_metadata()
        self.layout: FileLayout | None = None  # the loaded file's, once read

    @staticmethod
    def default_metadata() -> dict[str, str]:
        """What every file says about itself: format, producer and version."""
        return {"format": "burnpack", "producer": "burnish", "version": __version__}

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> BurnpackStore:
        """A store on `path` (`.bpk` is appended when the name has no extension)."""
        return cls(Path(path))

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | None = None) -> BurnpackStore:
        """A store on bytes in memory (None: an empty one to save into; see `get_bytes`)."""
        return cls(None, data)

    def auto_extension(self, enable: bool = True) -> BurnpackStore:
        """Whether `.bpk` is appended to a path without extension (default on)."""
        return self._replace(auto_extension_enabled=bool(enable))

    def get_bytes(self) -> bytes:
        """The container a `from_bytes` store holds (after a save, the saved one)."""
        if self.data is None:
            raise RecordError("This BurnpackStore holds no bytes: save a module into it first.")
        return bytes(self.data)

    def file_path(self) -> Path:
        """The file read and written."""
        assert self.path is not None
        if self.auto_extension_enabled and not self.path.suffix:
            return self.path.with_suffix(".bpk")
        return self.path

    def describe(self) -> str:
        return f"BurnpackStore({str(self.file_path()) if self.path else '<bytes>'!r})"

    def reader(self) -> burnpack.PackReader:
        """The validated container (the file is mapped, not read)."""
        if self.path is None:
            if self.data is None:
                raise RecordError("This BurnpackStore holds no bytes to load from.")
            return burnpack.PackReader.from_buffer(bytearray(self.data))
        path = self.file_path()
        if not path.is_file():
            raise RecordError(f"No Burnpack file at {str(path)!r}. Check the path.")
        return burnpack.PackReader.from_file(path)

    def _read(self) -> dict[str, TensorSnapshot]:
        reader = self.reader()
        self.layout = file_layout(reader.metadata,
                                  (d.param_id for d in reader.descriptors.values()))  # fmt: skip
        snapshots = {}
        for name, descriptor in reader.descriptors.items():
            dtype = burnpack.DTYPES[descriptor.dtype]
            snapshots[name] = TensorSnapshot(
                tuple(name.split(".")), (), descriptor.shape, dtype, descriptor.param_id,
                lambda name=name: reader.tensor(name),  # type: ignore[misc]
                lambda name=name: reader.release(name),  # type: ignore[misc]
            )  # fmt: skip
        return snapshots

    def _load_adapter(self, module: nn.Module) -> ModuleAdapter:
        """Burn's layout is adapted, PyTorch's loaded as is, a file Burn's store wrote as its
        tensors tell; see `layout.load_adapter`."""
        shapes = {name: tuple(s.shape) for name, s in self.get_all_snapshots().items()}
        return load_adapter(self.layout, self.from_adapter, self.explicit_from_adapter, module,
                            self.describe(), shapes)  # fmt: skip

    def _write(self, snapshots: list[TensorSnapshot]) -> None:
        tensors = [_pack_tensor(snapshot) for snapshot in snapshots]
        metadata = {**self.extra_metadata, LAYOUT_KEY: written_layout(self.to_adapter)}
        chunks = burnpack.encode_chunks(tensors, metadata)
        if self.path is None:
            self.data = b"".join(bytes(chunk) for chunk in chunks)
            return
        path = self.file_path()
        if path.exists() and not self.overwriting:
            raise RecordError(
                f"File already exists: {str(path)!r}. Use .overwrite(True) to overwrite."
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(path) as file:
            for chunk in chunks:
                file.write(chunk)


def _pack_tensor(snapshot: TensorSnapshot) -> burnpack.PackTensor:
    return burnpack.PackTensor(snapshot.full_path, snapshot.dtype, tuple(snapshot.shape),
                               snapshot.param_id, snapshot.data_fn)  # fmt: skip

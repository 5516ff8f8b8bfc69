"""`PytorchStore`: PyTorch `.pt`/`.pth` files, read without running code (read-only)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from burnish.errors import RecordError
from burnish.record.store.base import ModuleStore
from burnish.record.store.snapshot import TensorSnapshot

__all__ = ["PytorchStore"]

_MAX_DEPTH = 100


class PytorchStore(ModuleStore):
    """A PyTorch checkpoint: `torch.load(weights_only=True, mmap=True)`, nested dicts flattened
    to dotted names; `with_top_level_key("state_dict")` picks a nested state dict."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.top_level_key: str | None = None

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> PytorchStore:
        """A store on the file at `path`."""
        return cls(Path(path))

    def with_top_level_key(self, key: str) -> PytorchStore:
        """Read the tensors under `key` (e.g. `"state_dict"`, `"model_state_dict"`)."""
        return self._replace(top_level_key=key, _snapshots=None)

    def describe(self) -> str:
        return f"PytorchStore({str(self.path)!r})"

    def _read(self) -> dict[str, TensorSnapshot]:
        if not self.path.is_file():
            raise RecordError(f"No PyTorch file at {str(self.path)!r}. Check the path.")
        try:
            content = torch.load(self.path, map_location="cpu", weights_only=True,
                                 mmap=_is_zip(self.path))  # fmt: skip
        except Exception as error:  # unpickling refusals, corrupt zips, ...
            raise RecordError(
                f"Cannot read PyTorch file {str(self.path)!r} safely: {error}. Only tensors, "
                "containers and numbers load (weights_only=True); save the model's "
                "state_dict, not the model."
            ) from None
        if self.top_level_key is not None:
            if not isinstance(content, dict) or self.top_level_key not in content:
                keys = sorted(map(str, content))[:10] if isinstance(content, dict) else []
                raise RecordError(
                    f"{self.describe()} has no top-level key {self.top_level_key!r}; "
                    f"its keys: {keys}."
                )
            content = content[self.top_level_key]
        flat: dict[str, torch.Tensor] = {}
        _flatten(content, "", flat, 0)
        return {name: TensorSnapshot.from_tensor(name, tensor) for name, tensor in flat.items()}

    def _write(self, snapshots: list[TensorSnapshot]) -> None:
        raise RecordError(
            "PytorchStore is read-only (as in Burn). Save with SafetensorsStore, or "
            "torch.save(model.state_dict(), path)."
        )


def _is_zip(path: Path) -> bool:
    with open(path, "rb") as file:
        return file.read(4) == b"PK\x03\x04"


def _flatten(value: Any, prefix: str, out: dict[str, torch.Tensor], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise RecordError(f"PyTorch file nests deeper than {_MAX_DEPTH} levels at {prefix!r}.")
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out, depth + 1)

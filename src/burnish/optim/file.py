"""An optimizer's state in a file (Burn main: `ModuleOptimizer::save` / `load`).

optim.save("artifacts/optim")                  # -> Path("artifacts/optim.mpk")
optim = AdamConfig().init().load("artifacts/optim")

Burn writes a burnpack file; burnish writes its record with a recorder (default: named
MessagePack in double precision, so state of any float dtype comes back bit for bit, as
Burn's burnpack keeps each tensor's dtype). The recorder adds its extension when the path
has none, and `load` finds the file with or without it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from burnish.optim.base import Optimizer

__all__ = ["load_optimizer", "save_optimizer"]


def _recorder(recorder: Any) -> Any:
    """`recorder`, or the default: `NamedMpkFileRecorder(DoublePrecisionSettings())`."""
    if recorder is None:
        from burnish.record import DoublePrecisionSettings, NamedMpkFileRecorder

        return NamedMpkFileRecorder(DoublePrecisionSettings())
    if not callable(getattr(recorder, "record", None)) or not callable(
        getattr(recorder, "load", None)
    ):
        raise TypeError(
            "`recorder` must be a burnish recorder (e.g. DefaultRecorder(), "
            f"NamedMpkFileRecorder(DoublePrecisionSettings())). Received: {recorder!r} "
            f"({type(recorder).__name__})."
        )
    return recorder


def save_optimizer(optim: Optimizer, path: str | os.PathLike, recorder: Any = None) -> Path:
    """Write `optim.to_record()` to `path` with `recorder`; the path written."""
    return Path(_recorder(recorder).record(optim.to_record(), path, record_type="optimizer"))


def load_optimizer(
    optim: Optimizer,
    path: str | os.PathLike,
    recorder: Any = None,
    device: torch.device | str | None = None,
) -> Optimizer:
    """`optim.load_record` of the record at `path` (written by `save_optimizer`)."""
    record = _recorder(recorder).load(path, device)
    return optim.load_record(record)

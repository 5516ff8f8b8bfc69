"""PyTorch `.pt`/`.pth` imports through `torch.load(weights_only=True)`: no code runs from the file.

`weights_only=True` uses PyTorch's restricted unpickler, which only rebuilds tensors and plain
containers; it is the one unpickling on any burnish load path, and only for this import.
"""

from __future__ import annotations

import io
import warnings
from typing import Any

import torch

from burnish.errors import RecordError

__all__ = ["decode"]


def decode(data: bytes | bytearray) -> Any:
    """Load a PyTorch file's object (tensors on CPU) or raise `RecordError`."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.load(io.BytesIO(bytes(data)), map_location="cpu", weights_only=True)
    except Exception as error:  # UnpicklingError, RuntimeError (zip), EOFError, ...
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise RecordError(
            f"Cannot import the PyTorch file ({text[:300]}). Only tensors and plain containers "
            "load (torch.load(weights_only=True)); re-save the state_dict with torch.save."
        ) from None

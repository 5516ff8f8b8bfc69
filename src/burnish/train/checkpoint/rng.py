"""Capture and restore every RNG a training step may draw from, as a record."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import torch

# The host-side states (no device sync), taken and put back around a validation inside an
# epoch: defined below the train layer (burnish.rng), for the learning-rate finder too.
from burnish.rng import RngState, preserved_rng, restore_rng, rng_state

__all__ = [
    "RngState",
    "load_rng_record",
    "preserved_rng",
    "restore_rng",
    "rng_record",
    "rng_state",
]


def rng_record() -> dict[str, Any]:
    """The states of Python's `random`, NumPy's global RNG, torch's CPU and CUDA generators."""
    version, internal, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    record: dict[str, Any] = {
        "python": {"version": version, "state": list(internal), "gauss": gauss},
        "numpy": {
            "kind": kind,
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        record["cuda"] = list(torch.cuda.get_rng_state_all())
    return record


def load_rng_record(record: dict[str, Any]) -> None:
    """Restore what `rng_record` captured."""
    python = record["python"]
    random.setstate((python["version"], tuple(python["state"]), python["gauss"]))
    numpy = record["numpy"]
    keys = np.asarray(torch.as_tensor(numpy["keys"]).cpu().numpy(), dtype=np.uint32)
    np.random.set_state((numpy["kind"], keys, numpy["pos"], numpy["has_gauss"], numpy["cached"]))
    torch.set_rng_state(torch.as_tensor(record["torch"], dtype=torch.uint8).cpu())
    if "cuda" in record and torch.cuda.is_available():
        states = [torch.as_tensor(s, dtype=torch.uint8).cpu() for s in record["cuda"]]
        torch.cuda.set_rng_state_all(states[: torch.cuda.device_count()])

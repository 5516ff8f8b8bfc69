"""Device values read back to the host in one transfer per device (the metrics processor's
drains): never one sync per value."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["to_host"]


def to_host(values: list[Any]) -> list[float]:
    """Python floats for a list of floats and 0-dim tensors: one transfer per device."""
    out: list[float] = [0.0] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for i, value in enumerate(values):
        if isinstance(value, torch.Tensor):
            by_device.setdefault(value.device, []).append(i)
        else:
            out[i] = float(value)
    for device, indices in by_device.items():
        # One kernel and one copy: `stack` promotes floating values to the widest of their
        # dtypes, which holds each exactly. An integer beside float32 values might not fit
        # float32's 24 bits: then every value is widened first (MPS has no float64).
        tensors = [values[i].detach().reshape(()) for i in indices]
        stacked = torch.stack(tensors)
        if stacked.dtype.itemsize < 8 and not all(t.is_floating_point() for t in tensors):
            wide = torch.float32 if device.type == "mps" else torch.float64
            stacked = torch.stack([t.to(wide) for t in tensors])
        for i, value in zip(indices, stacked.tolist()):
            out[i] = float(value)
    return out

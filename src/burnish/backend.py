"""Devices and seeding (Burn's `Backend::seed` and `Device`)."""

from __future__ import annotations

import os
import random

import numpy as np
import torch

__all__ = ["available_devices", "check_device", "device", "seed"]


def seed(value: int) -> None:
    """Seed Python's `random`, NumPy's global RNG and torch's RNGs on every device.

    Args:
        value: a non-negative integer below 2**32.

    Raises:
        ValueError: if `value` is negative, too large, or not an integer.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
        raise ValueError(f"`seed` must be an integer in [0, 2**32). Received: seed={value!r}.")
    random.seed(value)
    np.random.seed(value)
    torch.manual_seed(value)  # also seeds every CUDA device


def device(spec: str | torch.device = "cpu") -> torch.device:
    """Parse a device: `"cpu"`, `"cuda"`, `"cuda:1"`, `"mps"`, or a `torch.device`.

    Raises:
        ValueError: if the string is not a device torch knows.
    """
    if isinstance(spec, torch.device):
        return spec
    try:
        return torch.device(spec)
    except (RuntimeError, TypeError) as error:
        raise ValueError(
            f"Unknown device {spec!r}. Use 'cpu', 'cuda', 'cuda:<index>' or 'mps'."
        ) from error


def available_devices() -> list[str]:
    """The devices this process can train on: `"cpu"`, then each CUDA device, then `"mps"`."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found += [f"cuda:{index}" for index in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def check_device(spec: torch.device, local_rank: int | None = None) -> None:
    """Raise unless `spec` exists here: one message naming it, what exists, and the fix.

    Args:
        spec: the device asked for.
        local_rank: under torchrun, the rank on this machine (a CUDA device becomes
            `cuda:<local_rank>`); None: read from `LOCAL_RANK` when set.

    Raises:
        ValueError: if the device's kind is not available or its index is out of range.
    """
    if spec.type == "cpu":
        return
    if local_rank is None and "LOCAL_RANK" in os.environ and spec.type == "cuda":
        local_rank = int(os.environ["LOCAL_RANK"])
    available = available_devices()
    listed = ", ".join(available)
    fix = (
        f"Pass one of them to `.devices([...])` (e.g. `bn.device({available[-1]!r})`), or "
        "leave `.devices` out to train where the model already is."
    )
    if spec.type == "cuda":
        _check_cuda(spec, local_rank, listed, fix)
    elif spec.type == "mps":
        if "mps" not in available:
            raise ValueError(
                f"Device {str(spec)!r} is not available: this torch finds no Apple GPU (MPS "
                f"needs macOS on Apple silicon and a torch built with MPS). Available: {listed}. "
                + fix
            )
    else:
        backend = getattr(torch, spec.type, None)
        is_available = getattr(backend, "is_available", None)
        if callable(is_available) and not is_available():
            raise ValueError(
                f"Device {str(spec)!r} is not available: torch.{spec.type}.is_available() is "
                f"False. Available: {listed}. " + fix
            )


def _check_cuda(spec: torch.device, local_rank: int | None, listed: str, fix: str) -> None:
    if not torch.cuda.is_available():
        if torch.version.cuda is None:
            why = f"this torch ({torch.__version__}) was built without CUDA"
            fix += (
                " To use an NVIDIA GPU, install a CUDA build of torch "
                "(https://pytorch.org/get-started/locally/)."
            )
        else:
            why = (
                f"this torch (CUDA {torch.version.cuda}) finds no GPU: check the driver "
                "(`nvidia-smi`) and CUDA_VISIBLE_DEVICES"
            )
        raise ValueError(
            f"Device {str(spec)!r} is not available: {why}. Available: {listed}. {fix}"
        )
    count = torch.cuda.device_count()
    index = local_rank if local_rank is not None else spec.index
    if index is not None and not 0 <= index < count:
        which = f"index {index}"
        if local_rank is not None:
            which = f"local rank {index} (torchrun gives each rank cuda:<LOCAL_RANK>)"
        raise ValueError(
            f"Device {str(spec)!r} does not exist: {which} but this machine has {count} CUDA "
            f"device(s). Available: {listed}. {fix}"
        )

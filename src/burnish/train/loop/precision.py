"""Mixed precision in the Learner (`LearnerBuilder.mixed_precision`).

`train_step` and `valid_step` run under `torch.autocast` in the half type; parameters,
gradients, optimizer state and checkpoints stay float32. With float16 a `GradScaler` scales the
loss `bn.backward` differentiates inside `train_step`, and the learner unscales the returned
gradients before clipping and the optimizer step. bf16 on a device without bf16 arithmetic of
its own (`burnish.capability.bf16_support`) is emulated: the run warns once, at fit start.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from burnish.capability import bf16_support
from burnish.optim import GradScaler

__all__ = ["MixedPrecision", "parse_precision", "warn_emulated_bf16"]

_NAMES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def parse_precision(precision: Any) -> torch.dtype:
    """The half type `precision` names: `"bf16"`, `"fp16"`, `torch.bfloat16`, `torch.float16`.

    Raises:
        ValueError: for anything else.
    """
    if isinstance(precision, torch.dtype) and precision in _NAMES.values():
        return precision
    if isinstance(precision, str) and precision in _NAMES:
        return _NAMES[precision]
    raise ValueError(
        '`precision` must be "bf16", "fp16", torch.bfloat16 or torch.float16. Received: '
        f"precision={precision!r}."
    )


class MixedPrecision:
    """How one run's steps execute: autocast to `dtype` on `device`, scaling for float16.

    Args:
        dtype: the half type of the steps.
        device: the device the model is on (its type picks the autocast backend).
    """

    def __init__(self, dtype: torch.dtype, device: torch.device) -> None:
        self.dtype = dtype
        self.device = device
        self.device_type = device.type
        self.scaler = GradScaler().to_device(device) if dtype is torch.float16 else None

    @contextlib.contextmanager
    def train(self) -> Iterator[None]:
        """Around `train_step`: autocast, and `bn.backward` scaling the loss for float16."""
        with torch.autocast(self.device_type, dtype=self.dtype):
            if self.scaler is None:
                yield
            else:
                with self.scaler.scaling():
                    yield

    def valid(self) -> torch.autocast:
        """Around `valid_step`: autocast."""
        return torch.autocast(self.device_type, dtype=self.dtype)

    def emulation_warning(self) -> str | None:
        """The fit-start warning when bf16 would be emulated on the run's CPU or GPU: several
        times slower than float32 there. None for float16, or where bf16 is native."""
        if self.dtype is not torch.bfloat16 or self.device_type not in ("cpu", "cuda"):
            return None
        support = bf16_support(self.device)
        if support.native:
            return None
        return (
            f'mixed_precision("bf16") on {self.device}: {support.reason}, several times slower '
            "than float32. Leave `.mixed_precision(...)` out to train in float32 there; "
            f'`burnish.capability.bf16_support("{self.device}")` tells whether a device has '
            "native bf16."
        )


def warn_emulated_bf16(precision: MixedPrecision | None, warn: Callable[[str], None]) -> None:
    """At fit start (main process): `warn` once if the run's bf16 would be emulated."""
    text = precision.emulation_warning() if precision is not None else None
    if text is not None:
        warn(text)

"""Precision settings (Burn's `PrecisionSettings`): the element types a recorder stores."""

from __future__ import annotations

import dataclasses

import torch

__all__ = [
    "DoublePrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "PrecisionSettings",
    "resolve_settings",
]


@dataclasses.dataclass(frozen=True)
class PrecisionSettings:
    """The float and int element types a recorder stores tensors with.

    Floating-point tensors are cast to `float_dtype` when recorded, except a tensor whose
    finite values would overflow it to inf, which keeps its own dtype (values below the
    type's smallest normal number do lose precision, or become zero: half precision suits
    model weights, not optimizer second moments). Integer tensors wider than
    `int_dtype` are narrowed to it when every value fits and kept at their own width otherwise
    (a record never wraps an integer). Bool tensors are stored as bools. Loading restores every
    tensor to the dtype it had when recorded, so any precision loads into any model.

    Attributes:
        float_dtype: element type of recorded floating-point tensors.
        int_dtype: widest element type of recorded integer tensors.
    """

    float_dtype: torch.dtype = torch.float32
    int_dtype: torch.dtype = torch.int32

    @property
    def name(self) -> str:
        """The settings' class name, written into every file's metadata."""
        return type(self).__name__


@dataclasses.dataclass(frozen=True)
class FullPrecisionSettings(PrecisionSettings):
    """float32 / int32 (Burn's default settings, used by `DefaultRecorder`)."""

    float_dtype: torch.dtype = torch.float32
    int_dtype: torch.dtype = torch.int32


@dataclasses.dataclass(frozen=True)
class HalfPrecisionSettings(PrecisionSettings):
    """float16 / int16: half the size on disk (used by `CompactRecorder`)."""

    float_dtype: torch.dtype = torch.float16
    int_dtype: torch.dtype = torch.int16


@dataclasses.dataclass(frozen=True)
class DoublePrecisionSettings(PrecisionSettings):
    """float64 / int64: lossless for every dtype torch trains with."""

    float_dtype: torch.dtype = torch.float64
    int_dtype: torch.dtype = torch.int64


def resolve_settings(
    settings: PrecisionSettings | type[PrecisionSettings] | None,
) -> PrecisionSettings:
    """Accept a settings instance, a settings class (as Burn's type parameter) or None (full).

    Raises:
        TypeError: if `settings` is neither.
    """
    if settings is None:
        return FullPrecisionSettings()
    if isinstance(settings, type) and issubclass(settings, PrecisionSettings):
        return settings()
    if isinstance(settings, PrecisionSettings):
        return settings
    raise TypeError(
        "`settings` must be a PrecisionSettings (e.g. HalfPrecisionSettings() or "
        f"HalfPrecisionSettings). Received: settings={settings!r}."
    )

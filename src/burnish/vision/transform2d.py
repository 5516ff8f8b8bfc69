"""Burn's `burn::vision::Transform2D`: an affine transform of a batch of images.

Rotation, scale, translation and shear are 2x3 affine matrices in normalized coordinates
([-1, 1] across the image, as `grid_sample`'s); `composed` multiplies them, and `transform`
resamples `[batch, channels, height, width]` images through the matrix (bilinear,
`align_corners=True`, the border's pixels repeated by default), as Burn does with
`affine_grid_2d` and `grid_sample_2d`. The matrix maps each output pixel to where it is read
in the input.

Example:
    >>> import math, torch
    >>> from burnish.vision import Transform2D
    >>> image = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> Transform2D.rotation(math.pi / 2, 0.0, 0.0).transform(image).round()
    tensor([[[[2., 4.],
              [1., 3.]]]])
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable

import torch
import torch.nn.functional as F

__all__ = ["GridSamplePaddingMode", "Transform2D"]

Matrix = tuple[tuple[float, float, float], tuple[float, float, float]]


class GridSamplePaddingMode(str, enum.Enum):
    """What is read outside the image (Burn's `GridSamplePaddingMode`)."""

    Zeros = "zeros"
    Border = "border"
    Reflection = "reflection"


class Transform2D:
    """A 2D affine transform (Burn's `Transform2D`); build it with its constructors.

    Args:
        transform: the 2x3 matrix, rows `(a, b, tx)` and `(c, d, ty)`.
        padding_mode: what is read outside the image (default `Border`, Burn's).
    """

    def __init__(
        self,
        transform: Matrix,
        padding_mode: GridSamplePaddingMode | str = GridSamplePaddingMode.Border,
    ) -> None:
        self.matrix = transform
        self.padding_mode = _padding_mode(padding_mode)

    def transform(self, img: torch.Tensor) -> torch.Tensor:
        """The images `img` (`[batch, channels, height, width]`, floating point) resampled.

        Raises:
            ValueError: if `img` is not a 4-dimensional floating-point tensor.
        """
        if not isinstance(img, torch.Tensor) or img.dim() != 4 or not img.is_floating_point():
            received = tuple(img.shape) if isinstance(img, torch.Tensor) else type(img).__name__
            raise ValueError(
                "`Transform2D.transform` takes floating-point images [batch, channels, height, "
                f"width]. Received: {received}. Add the missing dimensions (e.g. "
                "`images.unsqueeze(1)` for [batch, height, width]) and convert with `.float()`."
            )
        theta = torch.tensor(self.matrix, dtype=img.dtype, device=img.device)
        theta = theta.reshape(1, 2, 3).expand(img.shape[0], 2, 3)
        grid = F.affine_grid(theta, list(img.shape), align_corners=True)
        return F.grid_sample(
            img, grid, mode="bilinear", padding_mode=self.padding_mode.value, align_corners=True
        )

    def with_padding_mode(self, padding_mode: GridSamplePaddingMode | str) -> Transform2D:
        """The same transform reading `padding_mode` outside the image."""
        return Transform2D(self.matrix, padding_mode)

    @classmethod
    def composed(cls, transforms: Iterable[Transform2D]) -> Transform2D:
        """The product `identity * t1 * t2 * ...` of `transforms` (Burn's order); the padding
        mode is the identity's, `Border`."""
        result = cls.identity()
        for transform in transforms:
            result = result._mul(transform)
        return result

    def _mul(self, other: Transform2D) -> Transform2D:
        (a, b, c), (d, e, f) = self.matrix
        (g, h, i), (j, k, m) = other.matrix
        return Transform2D(
            ((a * g + b * j, a * h + b * k, a * i + b * m + c),
             (d * g + e * j, d * h + e * k, d * i + e * m + f)),
            self.padding_mode,
        )  # fmt: skip

    @classmethod
    def identity(cls) -> Transform2D:
        """The transform that changes nothing."""
        return cls(((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)))

    @classmethod
    def rotation(cls, theta: float, cx: float, cy: float) -> Transform2D:
        """A rotation by `theta` radians around `(cx, cy)` (normalized coordinates)."""
        finite = math.isfinite(theta)  # Rust's cos/sin of inf are NaN; Python's raise
        cos, sin = (math.cos(theta), math.sin(theta)) if finite else (math.nan, math.nan)
        return cls(((cos, -sin, cx - cos * cx + sin * cy), (sin, cos, cy - sin * cx - cos * cy)))

    @classmethod
    def scale(cls, sx: float, sy: float, cx: float, cy: float) -> Transform2D:
        """A scaling by `(sx, sy)` around `(cx, cy)`: the output reads the input at
        `s * (p - c) + c`, so `s < 1` zooms in."""
        return cls(((sx, 0.0, cx - sx * cx), (0.0, sy, cy - sy * cy)))

    @classmethod
    def translation(cls, tx: float, ty: float) -> Transform2D:
        """A translation by `(tx, ty)` (normalized: 2.0 is the image's width or height)."""
        return cls(((1.0, 0.0, tx), (0.0, 1.0, ty)))

    @classmethod
    def shear(cls, shx: float, shy: float, cx: float, cy: float) -> Transform2D:
        """A shear by `(shx, shy)`; Burn's matrix `[[1, shx, -shx * cy], [shy, 1, -shy * cx]]`."""
        return cls(((1.0, shx, -shx * cy), (shy, 1.0, -shy * cx)))

    def __repr__(self) -> str:
        return f"Transform2D({self.matrix!r}, padding_mode={self.padding_mode.name})"


def _padding_mode(mode: GridSamplePaddingMode | str) -> GridSamplePaddingMode:
    if isinstance(mode, GridSamplePaddingMode):
        return mode
    for member in GridSamplePaddingMode:
        if isinstance(mode, str) and mode.lower() in (member.value, member.name.lower()):
            return member
    raise ValueError(
        "`padding_mode` must be GridSamplePaddingMode.Zeros, Border or Reflection (or its "
        f"name). Received: {mode!r}."
    )

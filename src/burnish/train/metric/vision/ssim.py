"""Structural similarity (Burn main's `SsimMetric`, `burn::train::metric::vision`).

`SSIM = (2 mx my + C1)(2 cov + C2) / ((mx² + my² + C1)(vx + vy + C2))` with Gaussian-weighted
local means `mx`, `my`, variances `vx`, `vy` (clamped at 0) and covariance `cov`,
`C1 = (k1 · pixel_range)²`, `C2 = (k2 · pixel_range)²`. As Burn: a separable Gaussian window of
`kernel_size` and `sigma`, zero padding of `kernel_size // 2` so the map has the image's size,
and each image's SSIM the mean of its map over channels and pixels. The epoch value is the
mean over every image of the epoch, computed in float64 (float32 on MPS). torchmetrics pads
by reflection and averages the map without its border: the two agree on the map away from
the border, not on the mean.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype
from burnish.train.metric.vision.images import (
    ImagePairs,
    check_images,
    gaussian_blur,
    gaussian_window,
    rust_float,
)

__all__ = ["SsimInput", "SsimMetric", "SsimMetricConfig", "ssim_map"]


class SsimInput(ImagePairs):
    """Input of `SsimMetric` (`ImagePairs`): images `[N, C, H, W]`, H and W at least
    `kernel_size`, and references of the same shape."""


@dataclasses.dataclass(frozen=True)
class SsimMetricConfig:
    """Configuration of `SsimMetric` (Burn: `SsimMetricConfig::new(pixel_range)`).

    Attributes:
        pixel_range: max - min pixel value (1.0 for [0, 1], 2.0 for [-1, 1], 255.0 for 8 bits).
        k1: luminance stabiliser, default 0.01.
        k2: contrast stabiliser, default 0.03.
        kernel_size: the Gaussian window's size, odd, default 11.
        sigma: the Gaussian window's standard deviation, default 1.5.
    """

    pixel_range: float
    k1: float = 0.01
    k2: float = 0.03
    kernel_size: int = 11
    sigma: float = 1.5

    def __post_init__(self) -> None:
        for field in ("pixel_range", "k1", "k2", "sigma"):
            value = getattr(self, field)
            if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
                raise ValueError(f"`{field}` must be a finite number > 0. Received: {value!r}.")
        size = self.kernel_size
        if not isinstance(size, int) or size < 1 or size % 2 == 0:
            raise ValueError(
                f"`kernel_size` must be a positive odd int. Received: kernel_size={size!r}."
            )

    def with_k1_k2(self, k1: float, k2: float) -> SsimMetricConfig:
        """A copy with other `k1` and `k2`."""
        return dataclasses.replace(self, k1=k1, k2=k2)

    def with_kernel_size(self, kernel_size: int) -> SsimMetricConfig:
        """A copy with another window size."""
        return dataclasses.replace(self, kernel_size=kernel_size)

    def with_sigma(self, sigma: float) -> SsimMetricConfig:
        """A copy with another window standard deviation."""
        return dataclasses.replace(self, sigma=sigma)


def ssim_map(x: torch.Tensor, y: torch.Tensor, config: SsimMetricConfig) -> torch.Tensor:
    """The SSIM map `[N, C, H, W]` of images `x` and `y` (in their dtype)."""
    kernel = gaussian_window(config.kernel_size, config.sigma, x.dtype, x.device)
    c1 = (config.k1 * config.pixel_range) ** 2
    c2 = (config.k2 * config.pixel_range) ** 2
    blurred = gaussian_blur(torch.cat((x, y, x * x, y * y, x * y)), kernel).split(x.shape[0])
    mu_x, mu_y, mean_xx, mean_yy, mean_xy = blurred
    var_x = (mean_xx - mu_x * mu_x).clamp_min(0.0)
    var_y = (mean_yy - mu_y * mu_y).clamp_min(0.0)
    covariance = mean_xy - mu_x * mu_y
    numerator = (2.0 * mu_x * mu_y + c1) * (2.0 * covariance + c2)
    denominator = (mu_x * mu_x + mu_y * mu_y + c1) * (var_x + var_y + c2)
    return numerator / denominator


class SsimMetric(StatefulNumeric):
    """Mean SSIM over the epoch's images, in [-1, 1] (Burn: `SsimMetric`).

    Name `SSIM (dr={pixel_range}, w={kernel_size}, \u03c3={sigma})` with a Greek sigma, e.g.
    `SSIM (dr=1, w=11, \u03c3=1.5)`.

    Args:
        config: a `SsimMetricConfig`.
    """

    input_type = SsimInput
    higher_is_better = True
    precision = 4

    def __init__(self, config: SsimMetricConfig) -> None:
        super().__init__()
        if not isinstance(config, SsimMetricConfig):
            raise TypeError(
                "SsimMetric takes a SsimMetricConfig, e.g. SsimMetric(SsimMetricConfig(1.0)). "
                f"Received: {type(config).__name__}."
            )
        self.config = config
        self.name = (
            f"SSIM (dr={rust_float(config.pixel_range)}, w={config.kernel_size}, "
            f"\u03c3={rust_float(config.sigma)})"
        )

    def with_name(self, name: str) -> SsimMetric:
        """Burn's builder method: another name; returns a new metric."""
        return self._replace(name=name)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's per-image SSIM; returns their mean (a device tensor)."""
        data = adapt(item, SsimInput)
        kind, size = type(self).__name__, self.config.kernel_size
        check_images(kind, data.outputs, data.targets)
        height, width = data.outputs.shape[2:]
        if height < size or width < size:
            raise ValueError(
                f"{kind}: the images ({height}x{width}) must be at least kernel_size={size} "
                "high and wide. Use a smaller `with_kernel_size(...)` or larger images."
            )
        # float64 (where the device has it): in float32 the variances' cancellation, clamped at
        # 0, costs up to ~1e-4 (identical constant images score 0.9999)
        dtype = accumulate_dtype(data.outputs.device)
        values = ssim_map(data.outputs.to(dtype), data.targets.to(dtype), self.config)
        per_image = values.flatten(1).mean(dim=1)
        return NumericEntry(self.state.add(per_image.sum(), data.batch_size), data.batch_size)

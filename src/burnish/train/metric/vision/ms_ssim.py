"""Multi-scale structural similarity (Burn main's `MsSsimMetric`, `burn::train::metric::vision`).

Wang, Simoncelli and Bovik, "Multi-scale structural similarity for image quality assessment"
(2003). At each of the `M = len(betas)` scales `j` the contrast-structure map
`cs = (2 cov + C2) / (vx + vy + C2)` is averaged over the pixels, per image and channel; at the
last scale the luminance `(2 mx my + C1) / (mx² + my² + C1)` multiplies it (the SSIM map).
Each mean is clamped at 0 and raised to `betas[j]`; between scales both images are halved by
2x2 average pooling (odd sizes rounded down). As Burn: Gaussian windows of `kernel_size` and
`sigma` over reflect-padded images (the maps keep the image's size and their mean covers the
border), `C1 = (k1 · pixel_range)²`, `C2 = (k2 · pixel_range)²`, and an image's MS-SSIM the
mean over its channels of the per-channel products. The epoch value is the mean over every
image of the epoch, computed in float64 (float32 on MPS).

torchmetrics' `MultiScaleStructuralSimilarityIndexMeasure` differs: it averages the maps
without their border and over the channels before the power.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype
from burnish.train.metric.vision.images import (
    ImagePairs,
    check_images,
    gaussian_blur,
    gaussian_window,
    rust_float,
)

__all__ = ["MsSsimInput", "MsSsimMetric", "MsSsimMetricConfig"]

DEFAULT_BETAS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)
"""Wang et al.'s weights of the 5 scales, finest first (Burn's default)."""


@dataclasses.dataclass
class MsSsimInput(ImagePairs):
    """Input of `MsSsimMetric` (Burn: `MsSsimInput::new(outputs, targets)`).

    Images `[N, C, H, W]` and references of the same shape; H and W at least
    `kernel_size · 2^(scales - 1)` (176 for the defaults).

    Raises:
        ValueError: if the two shapes differ (Burn panics with "Shape mismatch").
    """

    def __post_init__(self) -> None:
        if self.outputs.shape != self.targets.shape:
            raise ValueError(
                f"Shape mismatch: outputs {list(self.outputs.shape)} targets "
                f"{list(self.targets.shape)}. MsSsimInput needs images and references of one "
                "shape [N, C, H, W]."
            )


def _positive(name: str, value: Any, hint: str, positive: str = "positive") -> None:
    if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be {positive}. Received: {name}={value!r}. {hint}")


@dataclasses.dataclass(frozen=True)
class MsSsimMetricConfig:
    """Configuration of `MsSsimMetric` (Burn: `MsSsimMetricConfig::new(pixel_range)`).

    Attributes:
        pixel_range: max - min pixel value (1.0 for [0, 1], 2.0 for [-1, 1], 255.0 for 8 bits).
        k1: luminance stabiliser, default 0.01.
        k2: contrast stabiliser, default 0.03.
        kernel_size: the Gaussian window's size, odd, default 11.
        sigma: the Gaussian window's standard deviation, default 1.5.
        channels: the images' channels, default 3 (1 for grayscale).
        betas: each scale's exponent, finest first; their number is the number of scales.
            Default `(0.0448, 0.2856, 0.3001, 0.2363, 0.1333)`.

    Raises:
        ValueError: naming the field, the value received and the fix (Burn's panics).
    """

    pixel_range: float
    k1: float = 0.01
    k2: float = 0.03
    kernel_size: int = 11
    sigma: float = 1.5
    channels: int = 3
    betas: tuple[float, ...] = DEFAULT_BETAS

    def __post_init__(self) -> None:
        _positive("pixel_range", self.pixel_range, "Use max - min pixel value, e.g. 1.0.")
        _positive("k1", self.k1, "The default is 0.01.")
        _positive("k2", self.k2, "The default is 0.03.")
        _positive("sigma", self.sigma, "The default is 1.5.", "a positive number")
        size = self.kernel_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1 or size % 2 == 0:
            raise ValueError(
                f"kernel_size must be positive and an odd number. Received: kernel_size="
                f"{size!r}. Use e.g. 11 (the default), 7 or 3."
            )
        channels = self.channels
        if isinstance(channels, bool) or not isinstance(channels, int) or channels < 1:
            raise ValueError(
                f"channels must be a positive number. Received: channels={channels!r}. Use 1 "
                "for grayscale, 3 for RGB."
            )
        object.__setattr__(self, "betas", _checked_betas(self.betas))

    def with_k1_k2(self, k1: float, k2: float) -> MsSsimMetricConfig:
        """A copy with other `k1` and `k2`."""
        return dataclasses.replace(self, k1=k1, k2=k2)

    def with_kernel_size(self, kernel_size: int) -> MsSsimMetricConfig:
        """A copy with another window size (positive, odd)."""
        return dataclasses.replace(self, kernel_size=kernel_size)

    def with_sigma(self, sigma: float) -> MsSsimMetricConfig:
        """A copy with another window standard deviation."""
        return dataclasses.replace(self, sigma=sigma)

    def with_channels(self, channels: int) -> MsSsimMetricConfig:
        """A copy for images of another number of channels."""
        return dataclasses.replace(self, channels=channels)

    def with_betas(self, betas: Sequence[float]) -> MsSsimMetricConfig:
        """A copy with other scale exponents (one per scale, non-negative, summing to 1 to
        compare settings, as in the paper)."""
        return dataclasses.replace(self, betas=betas)  # type: ignore[arg-type]  # checked, made a tuple


def _checked_betas(betas: Any) -> tuple[float, ...]:
    if isinstance(betas, (str, bytes)) or not isinstance(betas, Sequence):
        raise ValueError(
            f"betas must be a sequence of numbers, one per scale. Received: {betas!r}. Use "
            "e.g. with_betas([0.5, 0.3, 0.2])."
        )
    if len(betas) == 0:
        raise ValueError(
            "betas vector cannot be empty: its length is the number of scales. Received: (). "
            "Use e.g. with_betas([1.0]) for one scale."
        )
    valid = all(
        isinstance(b, (int, float)) and not isinstance(b, bool) and b >= 0 and math.isfinite(b)
        for b in betas
    )
    if not valid:
        raise ValueError(
            f"All beta values must be non-negative (finite numbers >= 0). Received: "
            f"betas={list(betas)!r}."
        )
    return tuple(float(b) for b in betas)


def _gaussian(size: int, sigma: float, device: torch.device | str | None) -> torch.Tensor:
    """The normalised 1D Gaussian window of `size` taps, in the accumulation dtype."""
    device = torch.device("cpu") if device is None else torch.device(device)
    return gaussian_window(size, sigma, accumulate_dtype(device), device)


def ms_ssim_per_image(
    x: torch.Tensor, y: torch.Tensor, kernel: torch.Tensor, config: MsSsimMetricConfig
) -> torch.Tensor:
    """MS-SSIM `[N]` of images `x`, `y` `[N, C, H, W]` (in their dtype, as `kernel`'s)."""
    c1 = (config.k1 * config.pixel_range) ** 2
    c2 = (config.k2 * config.pixel_range) ** 2
    product = x.new_ones(x.shape[:2])
    last = len(config.betas) - 1
    for scale, beta in enumerate(config.betas):
        blurred = gaussian_blur(torch.cat((x, y, x * x, y * y, x * y)), kernel, reflect=True).split(
            x.shape[0]
        )
        mu_x, mu_y, mean_xx, mean_yy, mean_xy = blurred
        var_x = (mean_xx - mu_x * mu_x).clamp_min(0.0)
        var_y = (mean_yy - mu_y * mu_y).clamp_min(0.0)
        covariance = mean_xy - mu_x * mu_y
        mean_map = (2.0 * covariance + c2) / (var_x + var_y + c2)
        if scale == last:
            luminance = (2.0 * mu_x * mu_y + c1) / (mu_x * mu_x + mu_y * mu_y + c1)
            mean_map = luminance * mean_map
        else:
            x, y = F.avg_pool2d(x, 2), F.avg_pool2d(y, 2)
        product = product * mean_map.mean(dim=(2, 3)).clamp_min(0.0).pow(beta)
    return product.mean(dim=1)


class MsSsimMetric(StatefulNumeric):
    """Mean MS-SSIM over the epoch's images, in [0, 1] (Burn: `MsSsimMetric`).

    Name `MS-SSIM (pr={pixel_range}, k={kernel_size}, \u03c3={sigma})`, e.g.
    `MS-SSIM (pr=1, k=11, \u03c3=1.5)`. Feed it an output whose `adapt(MsSsimInput)` returns
    the predicted and reference images (no built-in output does, as in Burn).

    Example:
        >>> config = MsSsimMetricConfig(1.0).with_channels(1)
        >>> MsSsimMetric(config).name
        'MS-SSIM (pr=1, k=11, \u03c3=1.5)'

    Args:
        config: a `MsSsimMetricConfig`.
        device: where to build the Gaussian window (Burn's `&device`); None: the CPU. It
            follows the images to their device at the first update there.

    Raises:
        TypeError: if `config` is not a `MsSsimMetricConfig`.
    """

    input_type = MsSsimInput
    higher_is_better = True
    precision = 4

    def __init__(
        self, config: MsSsimMetricConfig, device: torch.device | str | None = None
    ) -> None:
        super().__init__()
        if not isinstance(config, MsSsimMetricConfig):
            raise TypeError(
                "MsSsimMetric takes a MsSsimMetricConfig, e.g. "
                f"MsSsimMetric(MsSsimMetricConfig(1.0)). Received: {type(config).__name__}."
            )
        self.config = config
        self.kernel = _gaussian(config.kernel_size, config.sigma, device)
        self.name = (
            f"MS-SSIM (pr={rust_float(config.pixel_range)}, k={config.kernel_size}, "
            f"\u03c3={rust_float(config.sigma)})"
        )

    def with_name(self, name: str) -> MsSsimMetric:
        """Burn's builder method: another name; returns a new metric."""
        return self._replace(name=name)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's per-image MS-SSIM; returns their mean (a device tensor)."""
        data = adapt(item, MsSsimInput)
        outputs, targets = data.outputs, data.targets
        check_images(type(self).__name__, outputs, targets)
        self._check_size(outputs.shape)
        dtype = accumulate_dtype(outputs.device)
        if self.kernel.device != outputs.device or self.kernel.dtype != dtype:
            self.kernel = self.kernel.to(outputs.device, dtype)
        values = ms_ssim_per_image(outputs.to(dtype), targets.to(dtype), self.kernel, self.config)
        return NumericEntry(self.state.add(values.sum(), data.batch_size), data.batch_size)

    def _check_size(self, shape: torch.Size) -> None:
        config = self.config
        channels, height, width = shape[1:]
        if channels != config.channels:
            raise ValueError(
                f"Input has {channels} channels but metric was configured for "
                f"{config.channels}. Use MsSsimMetricConfig(...).with_channels({channels})."
            )
        scales = len(config.betas)
        min_size = config.kernel_size * 2 ** (scales - 1)
        if height < min_size or width < min_size:
            raise ValueError(
                f"Image dimensions (H={height}, W={width}) must be at least {min_size} to "
                f"support {scales} scales of MS-SSIM with kernel_size={config.kernel_size}. "
                "Either increase image size, reduce kernel_size, or reduce the number of "
                "scales (with_betas)."
            )

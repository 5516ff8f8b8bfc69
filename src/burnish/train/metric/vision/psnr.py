"""Peak signal-to-noise ratio (Burn main's `PsnrMetric`, `burn::train::metric::vision`).

Per image `PSNR = 10 · log10(max_pixel_val² / max(MSE, epsilon))` in dB, MSE over its channels
and pixels; the epoch value is the mean over every image of the epoch (torchmetrics'
`PeakSignalNoiseRatio(dim=(1, 2, 3))` apart from the clamp: identical images score
`10 · log10(max² / epsilon)`, 100 dB by default, where torchmetrics gives inf).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype
from burnish.train.metric.vision.images import ImagePairs, check_images, rust_float

__all__ = ["PsnrInput", "PsnrMetric", "PsnrMetricConfig"]


class PsnrInput(ImagePairs):
    """Input of `PsnrMetric`: images `[N, C, H, W]` and references (`ImagePairs`)."""


@dataclasses.dataclass(frozen=True)
class PsnrMetricConfig:
    """Configuration of `PsnrMetric` (Burn: `PsnrMetricConfig::new(max_pixel_val)`).

    Attributes:
        max_pixel_val: the largest pixel value (1.0 for [0, 1], 255.0 for 8-bit images).
        epsilon: the smallest MSE, so identical images score `10 · log10(max² / epsilon)`.
    """

    max_pixel_val: float
    epsilon: float = 1e-10

    def __post_init__(self) -> None:
        for field in ("max_pixel_val", "epsilon"):
            value = getattr(self, field)
            if not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
                raise ValueError(f"`{field}` must be a finite number > 0. Received: {value!r}.")

    def with_epsilon(self, epsilon: float) -> PsnrMetricConfig:
        """A copy with another `epsilon`."""
        return dataclasses.replace(self, epsilon=epsilon)


class PsnrMetric(StatefulNumeric):
    """Mean PSNR in dB over the epoch's images (name `PSNR@{max_pixel_val}`, e.g. `PSNR@1`).

    Args:
        config: a `PsnrMetricConfig`.

    Example:
        >>> PsnrMetric(PsnrMetricConfig(255.0)).name
        'PSNR@255'
    """

    input_type = PsnrInput
    higher_is_better = True
    unit = "dB"

    def __init__(self, config: PsnrMetricConfig) -> None:
        super().__init__()
        if not isinstance(config, PsnrMetricConfig):
            raise TypeError(
                "PsnrMetric takes a PsnrMetricConfig, e.g. PsnrMetric(PsnrMetricConfig(1.0)). "
                f"Received: {type(config).__name__}."
            )
        self.config = config
        self.name = f"PSNR@{rust_float(config.max_pixel_val)}"

    def with_name(self, name: str) -> PsnrMetric:
        """Burn's builder method: another name; returns a new metric."""
        return self._replace(name=name)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's per-image PSNR; returns their mean (a device tensor)."""
        data = adapt(item, PsnrInput)
        check_images(type(self).__name__, data.outputs, data.targets)
        dtype = accumulate_dtype(data.outputs.device)
        difference = data.outputs.to(dtype) - data.targets.to(dtype)
        mse = difference.square().flatten(1).mean(dim=1).clamp_min(self.config.epsilon)
        psnr = 10.0 * torch.log10(self.config.max_pixel_val**2 / mse)
        return NumericEntry(self.state.add(psnr.sum(), data.batch_size), data.batch_size)

"""Vision metrics (Burn main's `burn::train::metric::vision`): PSNR, SSIM, MS-SSIM, Dice."""

from __future__ import annotations

from burnish.train.metric.vision.dice import DiceInput, DiceMetric, DiceMetricConfig
from burnish.train.metric.vision.ms_ssim import MsSsimInput, MsSsimMetric, MsSsimMetricConfig
from burnish.train.metric.vision.psnr import PsnrInput, PsnrMetric, PsnrMetricConfig
from burnish.train.metric.vision.ssim import SsimInput, SsimMetric, SsimMetricConfig

__all__ = [
    "DiceInput",
    "DiceMetric",
    "DiceMetricConfig",
    "MsSsimInput",
    "MsSsimMetric",
    "MsSsimMetricConfig",
    "PsnrInput",
    "PsnrMetric",
    "PsnrMetricConfig",
    "SsimInput",
    "SsimMetric",
    "SsimMetricConfig",
]

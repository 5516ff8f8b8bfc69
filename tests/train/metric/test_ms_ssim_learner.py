"""MsSsimMetric registered on a learner as Burn main registers a metric (`.metrics((..))` on
`SupervisedTraining`), fed by an output of the user's own with an `MsSsimInput` adaptor (no
built-in output has one, as in Burn): a one-convolution denoiser trained on MNIST images. The
epoch value lands in the metric logs and is the MS-SSIM of the trained model's outputs."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train import Learner, SupervisedTraining, TrainOutput
from burnish.train.logger.base import metric_file_stem
from burnish.train.metric import (
    LossInput,
    LossMetric,
    MsSsimInput,
    MsSsimMetric,
    MsSsimMetricConfig,
)
from burnish.train.renderer import NullRenderer

from tests.helpers import mnist

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# 28x28 images: 3 scales of a 3-tap window need 3 * 2^2 = 12 pixels
CONFIG = MsSsimMetricConfig(1.0).with_kernel_size(3).with_sigma(1.0).with_channels(1)
CONFIG = CONFIG.with_betas([0.3, 0.4, 0.3])


@dataclasses.dataclass
class DenoisingOutput:
    """The user's output: `impl Adaptor<MsSsimInput>` and `Adaptor<LossInput>` in Burn."""

    loss: torch.Tensor
    output: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        return self.output.shape[0]

    def adapt(self, input_type):
        if input_type is LossInput:
            return LossInput(self.loss, self.batch_size)
        if input_type is MsSsimInput:
            return MsSsimInput(self.output, self.targets)
        return NotImplemented


class Denoiser(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 1, 3, padding=1)

    def forward(self, noisy: torch.Tensor) -> torch.Tensor:
        return noisy + self.conv(noisy)  # a residual: starts near the noisy input

    def forward_denoising(self, batch) -> DenoisingOutput:
        noisy, clean = batch
        output = self.forward(noisy)
        return DenoisingOutput(nn.functional.mse_loss(output, clean), output, clean)

    def train_step(self, batch) -> TrainOutput:
        item = self.forward_denoising(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch) -> DenoisingOutput:
        return self.forward_denoising(batch)


def _batches(split: str, count: int, batch_size: int, seed: int):
    """(noisy, clean) pairs of MNIST images in [0, 1], the noise drawn once."""
    dataset = mnist(split)
    clean = (
        torch.stack([torch.from_numpy(dataset.get(i).image.copy()) for i in range(count)])
        .float()
        .div(255)
        .unsqueeze(1)
    )
    gen = torch.Generator().manual_seed(seed)
    noisy = (clean + 0.3 * torch.randn(clean.shape, generator=gen)).clamp(0, 1)
    return list(zip(noisy.split(batch_size), clean.split(batch_size), strict=True))


def test_ms_ssim_epoch_value_lands_in_the_logs_and_matches_the_trained_model(tmp_path):
    bn.seed(0)
    dataloader_train, dataloader_valid = _batches("train", 96, 32, 1), _batches("test", 40, 16, 2)
    device = torch.device("cpu")
    result = (
        SupervisedTraining(tmp_path, dataloader_train, dataloader_valid)
        .metrics(MsSsimMetric(CONFIG, device), LossMetric())
        .renderer(NullRenderer())
        .num_epochs(2)
        .launch(Learner(Denoiser(), AdamConfig().init(), 1e-2))
    )
    name = "MS-SSIM (pr=1, k=3, \u03c3=1)"
    logged = {}
    for split in ("train", "valid"):
        for epoch in (1, 2):
            path = tmp_path / split / f"epoch-{epoch}" / f"{metric_file_stem(name)}.log"
            lines = path.read_text().splitlines()
            value, final = lines[-1].split(",")
            assert (
                final == "final"
                and len(lines)
                == len(dataloader_train if split == "train" else dataloader_valid) + 1
            )
            logged[split, epoch] = float(value)
    # the epoch value is the MS-SSIM of the trained model's outputs over the valid images
    metric = MsSsimMetric(CONFIG)
    with torch.no_grad():
        for noisy, clean in dataloader_valid:
            metric.update(MsSsimInput(result.model(noisy), clean), None)
    assert logged["valid", 2] == pytest.approx(float(metric.value()), rel=1e-6)
    # and training improved it
    assert all(0.0 < v <= 1.0 for v in logged.values())
    assert logged["valid", 2] > logged["valid", 1]

"""FID through `TorchMetric` (docs/metrics.md, "LPIPS and FID"): torchmetrics'
`FrechetInceptionDistance` with a feature extractor the user supplies — offline, no Inception
weights — behind the two-argument `update(preds, target)` that `TorchMetric` calls. Checked
against a hand-written Fréchet distance (SciPy's `sqrtm`) over a whole epoch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy import linalg
from torch import nn
from torchmetrics.image.fid import FrechetInceptionDistance

from burnish.record import CompactRecorder
from burnish.train.metric import TorchMetric, TorchMetricInput


class PairedFid(FrechetInceptionDistance):
    """FID fed as `update(generated, real)`: the recipe of docs/metrics.md."""

    def update(self, preds: torch.Tensor, target: torch.Tensor) -> None:  # type: ignore[override]
        super().update(target, real=True)
        super().update(preds, real=False)


class Features(nn.Module):
    """A fixed random projection of 1x8x8 images to 6 features (`num_features` spares
    torchmetrics its 299x299 probe)."""

    num_features = 6

    def __init__(self) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.register_buffer("weight", torch.randn(64, 6, generator=gen, dtype=torch.float64))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return images.flatten(1).double() @ self.weight


def _frechet(real: np.ndarray, fake: np.ndarray) -> float:
    mu1, mu2 = real.mean(0), fake.mean(0)
    s1, s2 = np.cov(real, rowvar=False), np.cov(fake, rowvar=False)
    root = linalg.sqrtm(s1 @ s2).real
    return float(((mu1 - mu2) ** 2).sum() + np.trace(s1 + s2 - 2 * root))


def _batches(seed: int):
    gen = torch.Generator().manual_seed(seed)
    out = []
    for n in (5, 3, 6):
        real = torch.rand(n, 1, 8, 8, generator=gen)
        generated = (real * 0.7 + 0.4 * torch.rand(n, 1, 8, 8, generator=gen)).clamp(0, 1)
        out.append(TorchMetricInput(generated, real))
    return out


def test_fid_with_a_user_feature_extractor_equals_the_frechet_distance_of_its_features():
    batches = _batches(0)
    extractor = Features()
    metric = TorchMetric(PairedFid(feature=extractor), name="FID")
    assert metric.higher_is_better is False  # torchmetrics' own flag, read by TorchMetric
    for data in batches:
        metric.update(data, None)
    entry = metric.epoch_entry()
    with torch.no_grad():
        real = torch.cat([extractor(b.target) for b in batches]).numpy()
        fake = torch.cat([extractor(b.preds) for b in batches]).numpy()
    assert entry.count == 14
    assert float(entry.value) == pytest.approx(_frechet(real, fake), rel=1e-6, abs=1e-9)
    assert float(entry.value) > 0.01


def test_fid_checkpoint_mid_epoch_resumes_to_the_same_value():
    batches = _batches(1)
    straight = TorchMetric(PairedFid(feature=Features()), name="FID")
    for data in batches:
        straight.update(data, None)
    first = TorchMetric(PairedFid(feature=Features()), name="FID")
    first.update(batches[0], None)
    recorder = CompactRecorder()
    saved = recorder.from_bytes(recorder.to_bytes({"m": first.to_record()}))["m"]
    resumed = TorchMetric(PairedFid(feature=Features()), name="FID")
    resumed.load_record(saved)
    for data in batches[1:]:
        resumed.update(data, None)
    assert float(resumed.epoch_entry().value) == float(straight.epoch_entry().value)


def test_fid_of_a_distribution_with_itself_is_zero():
    metric = TorchMetric(PairedFid(feature=Features()), name="FID")
    for data in _batches(2):
        metric.update(TorchMetricInput(data.target, data.target), None)
    assert float(metric.epoch_entry().value) == pytest.approx(0.0, abs=1e-6)

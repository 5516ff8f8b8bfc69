"""PSNR, SSIM and Dice (Burn main's vision metrics): torchmetrics (or an independent SciPy
reference where Burn's definition differs) over whole epochs, Burn's fixtures, constant and
extreme images, host syncs and a checkpoint round trip. Two ranks: test_epoch_metrics_ranks.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import ndimage
from torchmetrics.functional.image import structural_similarity_index_measure
from torchmetrics.image import PeakSignalNoiseRatio
from torchmetrics.segmentation import DiceScore

from burnish.record import CompactRecorder
from burnish.train.metric import (
    DiceInput,
    DiceMetric,
    DiceMetricConfig,
    PsnrInput,
    PsnrMetric,
    PsnrMetricConfig,
    SsimInput,
    SsimMetric,
    SsimMetricConfig,
)
from burnish.train.metric.vision.ssim import ssim_map

from tests.train.metric.helpers import no_host_sync

SIZES = (3, 1, 4)


def _images(seed: int, channels: int = 3, side: int = 16, scale: float = 1.0):
    gen = torch.Generator().manual_seed(seed)
    batches = []
    for n in SIZES:
        target = torch.rand(n, channels, side, side, generator=gen) * scale
        noise = torch.randn(n, channels, side, side, generator=gen) * 0.1 * scale
        batches.append(((target + noise).clamp(0, scale), target))
    return batches


def _epoch(metric, batches, make) -> float:
    for outputs, targets in batches:
        metric.update(make(outputs, targets), None)
    return float(metric.value())


# --- PSNR -------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_value", [1.0, 255.0])
@pytest.mark.parametrize("seed", range(3))
def test_psnr_equals_torchmetrics_over_an_epoch(seed: int, max_value: float) -> None:
    batches = _images(seed, scale=max_value)
    theirs = PeakSignalNoiseRatio(data_range=max_value, dim=(1, 2, 3))
    for outputs, targets in batches:
        theirs.update(outputs.double(), targets.double())
    ours = _epoch(PsnrMetric(PsnrMetricConfig(max_value)), batches, PsnrInput)
    assert ours == pytest.approx(float(theirs.compute()), rel=1e-6)  # theirs: float32


def test_psnr_burn_fixtures() -> None:
    image = torch.tensor([[[[1.0, 0.5], [0.25, 0.75]]]])
    metric = PsnrMetric(PsnrMetricConfig(1.0))
    assert _epoch(metric, [(image, image)], PsnrInput) == pytest.approx(100.0)  # clamped MSE
    constant = (torch.full((8, 3, 4, 4), 0.1), torch.zeros(8, 3, 4, 4))
    assert _epoch(PsnrMetric(PsnrMetricConfig(1.0)), [constant], PsnrInput) == pytest.approx(20.0)
    loose = PsnrMetric(PsnrMetricConfig(1.0).with_epsilon(0.01))
    assert _epoch(loose, [(image, image)], PsnrInput) == pytest.approx(20.0)
    assert PsnrMetric(PsnrMetricConfig(1.0)).name == "PSNR@1"
    assert PsnrMetric(PsnrMetricConfig(255.0)).with_name("Custom").name == "Custom"
    with pytest.raises(ValueError, match=r"`epsilon` must be a finite number > 0.*-1e-10"):
        PsnrMetricConfig(1.0).with_epsilon(-1e-10)
    with pytest.raises(ValueError, match="`max_pixel_val` must be"):
        PsnrMetricConfig(0.0)


# --- SSIM -------------------------------------------------------------------------------------


def _ssim_reference(x: np.ndarray, y: np.ndarray, config: SsimMetricConfig) -> np.ndarray:
    """Burn's definition with SciPy: zero-padded Gaussian windows, per-image mean of the map."""
    offsets = np.arange(config.kernel_size) - config.kernel_size // 2
    kernel = np.exp(-(offsets**2) / (2 * config.sigma**2))
    kernel /= kernel.sum()

    def blur(image):
        once = ndimage.correlate1d(image, kernel, axis=-1, mode="constant")
        return ndimage.correlate1d(once, kernel, axis=-2, mode="constant")

    c1, c2 = (config.k1 * config.pixel_range) ** 2, (config.k2 * config.pixel_range) ** 2
    mx, my = blur(x), blur(y)
    vx = np.maximum(blur(x * x) - mx * mx, 0)
    vy = np.maximum(blur(y * y) - my * my, 0)
    cov = blur(x * y) - mx * my
    ssim = (2 * mx * my + c1) * (2 * cov + c2) / ((mx**2 + my**2 + c1) * (vx + vy + c2))
    return ssim.reshape(len(x), -1).mean(axis=1)


@pytest.mark.parametrize(
    "config",
    [SsimMetricConfig(1.0), SsimMetricConfig(1.0).with_kernel_size(3).with_sigma(1.0),
     SsimMetricConfig(255.0).with_k1_k2(0.015, 0.025).with_kernel_size(7)],
    ids=["default", "w3", "255"],
)  # fmt: skip
@pytest.mark.parametrize("seed", range(2))
def test_ssim_equals_burns_definition_over_an_epoch(seed: int, config: SsimMetricConfig) -> None:
    batches = _images(seed, scale=config.pixel_range)
    ours = _epoch(SsimMetric(config), batches, SsimInput)
    per_image = np.concatenate(
        [_ssim_reference(o.double().numpy(), t.double().numpy(), config) for o, t in batches]
    )
    assert ours == pytest.approx(float(per_image.mean()), abs=1e-9)


def test_ssim_map_equals_torchmetrics_away_from_the_border() -> None:
    """torchmetrics pads by reflection and crops: the maps agree where the window fits."""
    outputs, targets = _images(4, side=20)[0]
    config = SsimMetricConfig(1.0)
    ours = ssim_map(outputs.double(), targets.double(), config)
    _, theirs = structural_similarity_index_measure(
        outputs.double(), targets.double(), data_range=1.0, return_full_image=True
    )
    border = config.kernel_size // 2
    inner = (..., slice(border, -border), slice(border, -border))
    torch.testing.assert_close(ours[inner], theirs[inner], atol=1e-9, rtol=1e-9)


def test_ssim_burn_fixtures() -> None:
    small = SsimMetricConfig(1.0).with_kernel_size(3).with_sigma(1.0)
    image = torch.rand(2, 1, 4, 4, generator=torch.Generator().manual_seed(0))
    assert _epoch(SsimMetric(small), [(image, image)], SsimInput) == pytest.approx(1.0)
    assert SsimMetric(small).name == "SSIM (dr=1, w=3, \u03c3=1)"
    assert SsimMetric(SsimMetricConfig(255.0)).name == "SSIM (dr=255, w=11, \u03c3=1.5)"
    with pytest.raises(ValueError, match=r"images \(4x4\) must be at least kernel_size=11"):
        SsimMetric(SsimMetricConfig(1.0)).update(SsimInput(image, image), None)
    with pytest.raises(ValueError, match=r"one shape \[N, C, H, W\].*\[1, 4, 4\]"):
        SsimMetric(small).update(SsimInput(image[0], image[0]), None)
    for bad in ({"kernel_size": 4}, {"kernel_size": 0}, {"sigma": 0.0}, {"k1": -0.1}):
        with pytest.raises(ValueError, match=f"`{next(iter(bad))}` must be"):
            SsimMetricConfig(1.0, **bad)
    with pytest.raises(ValueError, match="`pixel_range` must be"):
        SsimMetricConfig(0.0)


# --- Dice -------------------------------------------------------------------------------------


def _masks(seed: int, classes: int, dims: int = 4):
    gen = torch.Generator().manual_seed(seed)
    spatial = (6, 5, 4)[: dims - 2]
    batches = []
    for n in SIZES:
        labels = torch.randint(0, classes, (n, *spatial), generator=gen)
        noise = torch.randint(0, classes, (n, *spatial), generator=gen)
        predicted = torch.where(torch.rand(n, *spatial, generator=gen) < 0.7, labels, noise)
        one_hot = [
            torch.nn.functional.one_hot(t, classes).movedim(-1, 1) for t in (predicted, labels)
        ]
        batches.append(tuple(one_hot))
    return batches


@pytest.mark.filterwarnings("ignore:DiceScore metric currently defaults")
@pytest.mark.parametrize("include_background", [False, True])
@pytest.mark.parametrize(("classes", "dims"), [(2, 4), (4, 4), (3, 5), (3, 3)])
def test_dice_equals_torchmetrics_pooled_over_the_epoch(classes, dims, include_background) -> None:
    batches = _masks(classes + dims, classes, dims)
    config = DiceMetricConfig(include_background=include_background)
    ours = _epoch(DiceMetric(config, dims=dims), batches, DiceInput)
    theirs = DiceScore(classes, include_background, average="micro", aggregation_level="global")
    for predicted, labels in batches:
        theirs.update(predicted, labels)
    assert ours == pytest.approx(float(theirs.compute()), rel=1e-6)


def test_dice_burn_fixtures() -> None:
    def dice(outputs, targets, config=None) -> float:
        metric = DiceMetric(config)
        return _epoch(metric, [(torch.tensor(outputs), torch.tensor(targets))], DiceInput)

    assert dice([[[[1, 0], [1, 0]]]], [[[[1, 0], [1, 0]]]]) == pytest.approx(1.0)
    assert dice([[[[1, 0], [1, 0]]]], [[[[0, 1], [0, 1]]]]) < 1e-6
    assert dice([[[[1, 1], [0, 0]]]], [[[[1, 0], [1, 0]]]]) == pytest.approx(0.5)
    assert dice([[[[0, 0], [0, 0]]]], [[[[0, 0], [0, 0]]]]) == pytest.approx(1.0)  # both empty
    ones = torch.ones(1, 2, 2, 2).tolist()
    assert dice(ones, ones, DiceMetricConfig(include_background=True)) == pytest.approx(1.0)
    assert DiceMetric().name == "4D Dice Metric" and DiceMetric(dims=5).name == "5D Dice Metric"
    with pytest.raises(ValueError, match=r"at least 3 dimensions.*dims=2"):
        DiceMetric(dims=2)
    with pytest.raises(ValueError, match="include_background=True needs at least 2 classes"):
        dice([[[[1, 0]]]], [[[[1, 0]]]], DiceMetricConfig(include_background=True))
    with pytest.raises(
        ValueError, match=r"4D Dice Metric expects .*4 dimensions.*DiceMetric\(dims=3\)"
    ):
        dice([[[1, 0]]], [[[1, 0]]])


def test_dice_epoch_pools_rather_than_averaging_batches() -> None:
    """Burn averages batch values (a TODO in dice.rs); the epoch value pools the counts."""
    full = (torch.ones(1, 1, 4, 4), torch.ones(1, 1, 4, 4))  # 32 mask pixels, all overlap
    miss = (torch.zeros(1, 1, 2, 2), torch.ones(1, 1, 2, 2))  # 4, none
    metric = DiceMetric()
    entries = [metric.update(DiceInput(*b), None) for b in (full, miss)]
    assert float(metric.value()) == pytest.approx(32 / 36)
    assert float(entries[1].value) == pytest.approx(0.0, abs=1e-6)


# --- all three --------------------------------------------------------------------------------

_BUILDS = {
    "psnr": (lambda: PsnrMetric(PsnrMetricConfig(1.0)), PsnrInput),
    "ssim": (lambda: SsimMetric(SsimMetricConfig(1.0).with_kernel_size(3)), SsimInput),
    "dice": (lambda: DiceMetric(DiceMetricConfig(include_background=True)), DiceInput),
}


@pytest.mark.parametrize("name", sorted(_BUILDS))
def test_update_never_reads_the_device(name, monkeypatch) -> None:
    build, make = _BUILDS[name]
    batches = _masks(0, 3) if name == "dice" else _images(0)
    inputs = [make(o, t) for o, t in batches]
    metric = build()
    with no_host_sync(monkeypatch):
        entries = [metric.update(data, None) for data in inputs]
        value = metric.value()
    assert [e.count for e in entries] == list(SIZES)
    assert all(isinstance(e.value, torch.Tensor) and e.value.dim() == 0 for e in entries)
    assert value.dim() == 0 and value.dtype == torch.float64


@pytest.mark.parametrize("name", sorted(_BUILDS))
def test_checkpoint_round_trip_resumes_the_epoch_exactly(name) -> None:
    build, make = _BUILDS[name]
    batches = _masks(1, 3) if name == "dice" else _images(1)
    straight = build()
    expected = _epoch(straight, batches, make)
    first = build()
    _epoch(first, batches[:1], make)
    recorder = CompactRecorder()
    saved = recorder.from_bytes(recorder.to_bytes({"m": first.to_record()}))["m"]
    resumed = build()
    resumed.load_record(saved)
    assert _epoch(resumed, batches[1:], make) == expected
    resumed.clear()
    assert math.isnan(float(resumed.value()))


_PIXEL = st.floats(0, 1, width=32) | st.sampled_from([0.0, 1.0, 1e-30, 1e30, -1e30])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=_PIXEL,
    second=_PIXEL,
    constant=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_constant_and_extreme_images_never_crash(first, second, constant, seed) -> None:
    """Constant images (identical or not), tiny and huge pixels: PSNR is finite above 0 dB
    for images in range and at most `10 log10(max² / eps)`; SSIM is within [-1, 1] (NaN only
    where huge pixels overflow the squares); identical images score the maximum."""
    gen = torch.Generator().manual_seed(seed)
    shape = (2, 1, 5, 5)
    x = torch.full(shape, first) if constant else torch.rand(shape, generator=gen) * first
    y = torch.full(shape, second)
    psnr = PsnrMetric(PsnrMetricConfig(1.0))
    ssim = SsimMetric(SsimMetricConfig(1.0).with_kernel_size(3))
    psnr.update(PsnrInput(x, y), None)
    ssim.update(SsimInput(x, y), None)
    psnr_value, ssim_value = float(psnr.value()), float(ssim.value())
    assert psnr_value <= 100.0 + 1e-9
    if max(abs(first), abs(second)) <= 1.0:
        assert psnr_value >= 0.0 - 1e-9
        assert -1.0 - 1e-9 <= ssim_value <= 1.0 + 1e-9
    same_psnr, same_ssim = (
        PsnrMetric(PsnrMetricConfig(1.0)),
        SsimMetric(SsimMetricConfig(1.0).with_kernel_size(3)),
    )
    same_psnr.update(PsnrInput(x, x), None)
    same_ssim.update(SsimInput(x, x), None)
    assert float(same_psnr.value()) == pytest.approx(100.0)
    if max(abs(first), abs(second)) <= 1.0:
        assert float(same_ssim.value()) == pytest.approx(1.0)

"""Metrics that read the host, not the item: learning rate, speed, CPU, CUDA."""

from __future__ import annotations

import builtins
import math

import pytest
import torch

from burnish.train.metric import (
    CpuMemory,
    CpuUse,
    CudaMetric,
    IterationSpeedMetric,
    LearningRateMetric,
    MetricEntry,
    NumericEntry,
    speed,
)

from tests.train.metric.helpers import metadata


def test_learning_rate_is_the_epoch_mean_of_metadata_lr() -> None:
    metric = LearningRateMetric()
    entries = [metric.update(None, metadata(i, lr)) for i, lr in enumerate([1e-3, 3e-3], 1)]
    assert entries == [NumericEntry(1e-3, 1), NumericEntry(3e-3, 1)]
    assert float(metric.value()) == pytest.approx(2e-3)
    assert metric.update(None, metadata(3, None)).value == 0.0  # no lr (validation), as Burn
    metric.load_record(metric.to_record())
    assert float(metric.value()) == pytest.approx(4e-3 / 3)


def test_iteration_speed_counts_from_the_first_iteration(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([100.0, 102.0, 110.0])
    monkeypatch.setattr(speed.time, "perf_counter", lambda: next(clock))
    metric = IterationSpeedMetric()
    assert metric.update(None, metadata(1)).value == 0.0  # the clock starts
    assert metric.update(None, metadata(5)).value == 4 / 2.0
    assert float(metric.value()) == 2.0
    metric.clear()
    assert metric.update(None, metadata(1)).value == 0.0  # a new epoch restarts the clock


@pytest.mark.parametrize("metric_type", [CpuUse, CpuMemory])
def test_cpu_metrics_read_plausible_values(metric_type) -> None:
    metric = metric_type(refresh_interval=0.0)
    entry = metric.update(None, metadata())
    assert isinstance(entry, NumericEntry) and entry.count == 1
    if metric_type is CpuUse:
        assert 0.0 <= entry.value <= 100.0 and metric.name == "CPU Usage"
    else:
        assert 0.0 < entry.value <= metric.total_gb and metric.name == "CPU Memory"
    assert float(metric.value()) == entry.value


def test_cpu_metrics_explain_a_missing_psutil(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_psutil(name, *args, **kwargs):
        if name == "psutil":
            raise ImportError("No module named 'psutil'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_psutil)
    with pytest.raises(ImportError, match=r"CpuUse needs psutil.*pip install 'burnish\[system\]'"):
        CpuUse()


def test_negative_refresh_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"`refresh_interval` must be >= 0.*-1"):
        CpuMemory(refresh_interval=-1)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only behaviour")
def test_cuda_metric_without_cuda_warns_and_reports_unavailable() -> None:
    with pytest.warns(RuntimeWarning, match=r"CUDA is not available"):
        metric = CudaMetric()
    entry = metric.update(None, metadata())
    assert entry == MetricEntry("Cuda", "Unavailable", "Unavailable")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_metric_reports_memory_of_every_gpu() -> None:
    entry = CudaMetric(refresh_interval=0.0).update(None, metadata())
    assert entry.formatted.startswith("GPU #0 - Memory ")
    assert entry.formatted.count("GPU #") == torch.cuda.device_count()
    assert not math.isnan(torch.cuda.get_device_properties(0).total_memory)

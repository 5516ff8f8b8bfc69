"""Host and GPU resource metrics (Burn's `CpuUse`, `CpuMemory`, `CudaMetric`).

These read the system, not the step's output, at most every `refresh_interval` seconds (so
calling them every iteration costs a clock read). CPU metrics need psutil, imported when the
metric is built: `pip install 'burnish[system]'`.
"""

from __future__ import annotations

import time
import warnings
from types import ModuleType
from typing import Any

import torch

from burnish.train.metric.base import Metric, MetricEntry, MetricMetadata, Numeric, NumericEntry

__all__ = ["CpuMemory", "CpuUse", "CudaMetric"]

_REFRESH_INTERVAL = 0.2  # seconds, Burn's refresh frequency


def _import_psutil(metric: str) -> ModuleType:
    try:
        import psutil
    except ImportError as error:
        raise ImportError(
            f"{metric} needs psutil: install it (pip install 'burnish[system]' or "
            f"pip install psutil), or remove {metric} from the learner's metrics."
        ) from error
    return psutil


class _HostGauge(Numeric):
    """A numeric metric whose value is the latest reading of a host quantity."""

    higher_is_better = False

    def __init__(self, refresh_interval: float) -> None:
        if refresh_interval < 0:
            raise ValueError(
                f"`refresh_interval` must be >= 0 seconds. Received: {refresh_interval}."
            )
        self.refresh_interval = refresh_interval
        self._last_refresh = time.monotonic()
        self._current = self._read()

    def _read(self) -> float:  # pragma: no cover (abstract)
        raise NotImplementedError

    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Read the system if the last reading is older than `refresh_interval`."""
        now = time.monotonic()
        if now - self._last_refresh >= self.refresh_interval:
            self._current = self._read()
            self._last_refresh = now
        return NumericEntry(self._current, 1)

    def value(self) -> torch.Tensor:
        """The latest reading (a gauge, not an epoch mean, as in Burn)."""
        return torch.tensor(self._current, dtype=torch.float64)


class CpuUse(_HostGauge):
    """System-wide CPU use in percent, averaged over all cores.

    Args:
        refresh_interval: minimum seconds between two readings.

    Raises:
        ImportError: if psutil is not installed.
    """

    unit = "%"

    def __init__(self, refresh_interval: float = _REFRESH_INTERVAL) -> None:
        self._psutil = _import_psutil("CpuUse")
        self.name = "CPU Usage"
        self._psutil.cpu_percent(interval=None)  # starts psutil's measuring window
        super().__init__(refresh_interval)

    def _read(self) -> float:
        return float(self._psutil.cpu_percent(interval=None))


class CpuMemory(_HostGauge):
    """System RAM in use, in GB (10⁹ bytes, as Burn).

    Args:
        refresh_interval: minimum seconds between two readings.

    Raises:
        ImportError: if psutil is not installed.
    """

    unit = "GB"

    def __init__(self, refresh_interval: float = _REFRESH_INTERVAL) -> None:
        self._psutil = _import_psutil("CpuMemory")
        self.name = "CPU Memory"
        super().__init__(refresh_interval)

    def _read(self) -> float:
        memory = self._psutil.virtual_memory()
        self.total_gb = memory.total / 1e9
        return (memory.total - memory.available) / 1e9


class CudaMetric(Metric):
    """Memory and utilisation of every visible CUDA GPU, as text (Burn's `CudaMetric`).

    Per GPU: device-wide memory used / total (from NVML via `torch.cuda.device_memory_used`
    when the `pynvml` package is installed, else the memory this process's caching allocator
    reserved) and utilisation in percent (NVML only). Without CUDA the entry reads
    "Unavailable" and a warning says why, once, when the metric is built.

    Args:
        refresh_interval: minimum seconds between two readings.
    """

    def __init__(self, refresh_interval: float = _REFRESH_INTERVAL) -> None:
        self.name = "Cuda"
        self.refresh_interval = refresh_interval
        self.available = torch.cuda.is_available()
        self._last_refresh = -float("inf")
        self._text = "Unavailable"
        if not self.available:
            warnings.warn(
                "CudaMetric: CUDA is not available (torch.cuda.is_available() is False), so it "
                "will report 'Unavailable'. Remove it from the metrics on CPU-only machines.",
                RuntimeWarning,
                stacklevel=2,
            )

    def update(self, item: Any, metadata: MetricMetadata) -> MetricEntry:
        """Read the GPUs if the last reading is older than `refresh_interval`."""
        now = time.monotonic()
        if self.available and now - self._last_refresh >= self.refresh_interval:
            self._text = self._read()
            self._last_refresh = now
        return MetricEntry(self.name, self._text, self._text)

    @staticmethod
    def _read() -> str:
        parts = []
        for index in range(torch.cuda.device_count()):
            total_gb = torch.cuda.get_device_properties(index).total_memory / 1e9
            try:  # NVML: device-wide, like nvidia-smi; no CUDA context is created
                used_gb = torch.cuda.device_memory_used(index) / 1e9
                usage = f" - Usage {torch.cuda.utilization(index)}%"
            except Exception:  # no nvidia-ml-py, driver or permission: this process's view
                used_gb = torch.cuda.memory_reserved(index) / 1e9
                usage = " (reserved by this process)"
            parts.append(f"GPU #{index} - Memory {used_gb:.2f}/{total_gb:.2f} GB{usage}")
        return " | ".join(parts) if parts else "Unavailable"

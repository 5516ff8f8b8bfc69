"""The CPU's temperature in degrees Celsius (Burn's `CpuTemperature`).

Burn reads it with the `systemstat` crate, which on Linux reads the kernel's first thermal
zone, `/sys/class/thermal/thermal_zone0/temp`, else the first hardware monitor,
`/sys/class/hwmon/hwmon0/temp1_input` (both in millidegrees). burnish reads the same files. A
machine without them (most containers and virtual machines, macOS, Windows) has no reading:
the metric then logs NaN, as Burn's does, and says so once in a warning.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

from burnish.train.metric.system import _HostGauge

__all__ = ["CpuTemperature"]

SENSORS = ("class/thermal/thermal_zone0/temp", "class/hwmon/hwmon0/temp1_input")
"""The files read, in order, under the sysfs root (millidegrees Celsius)."""


class CpuTemperature(_HostGauge):
    """The CPU temperature in °C, read from sysfs at most every `refresh_interval` seconds.

    Burn: `CpuTemperature::new()`. Its value is the latest reading (a gauge, as in Burn),
    rounded to 2 decimals as Burn logs it; NaN where the machine has no sensor.

    Example:
        >>> builder.metric_train_numeric(CpuTemperature())  # doctest: +SKIP

    Args:
        refresh_interval: Minimum seconds between two readings (Burn reads at every update).
        sysfs_root: Where sysfs is mounted (`/sys`); another directory with the same layout
            serves too.

    Raises:
        ValueError: if `refresh_interval` < 0.
    """

    unit = "°C"

    def __init__(self, refresh_interval: float = 0.2, sysfs_root: str | os.PathLike = "/sys"):
        self.name = "CPU Temperature"
        self.sysfs_root = Path(sysfs_root)
        self._warned = False
        super().__init__(refresh_interval)

    def _read(self) -> float:
        errors = []
        for sensor in SENSORS:
            path = self.sysfs_root / sensor
            try:
                return round(float(path.read_text().strip()) / 1000.0, 2)
            except (OSError, ValueError) as error:
                errors.append(f"{path}: {error}")
        if not self._warned:
            self._warned = True
            warnings.warn(
                "CpuTemperature: this machine has no CPU temperature sensor burnish can read "
                f"({'; '.join(errors)}). The metric logs NaN, as Burn's does; remove it from "
                "the learner's metrics, or pass `sysfs_root` where sysfs is mounted.",
                RuntimeWarning,
                stacklevel=4,
            )
        return math.nan

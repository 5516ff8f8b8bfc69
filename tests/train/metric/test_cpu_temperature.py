"""CpuTemperature (Burn's `CpuTemperature::new()`): the sysfs sensor, or NaN and a warning."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from burnish.train.metric import CpuTemperature

from tests.train.metric.helpers import metadata


def sensor(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_reads_the_thermal_zone_in_millidegrees(tmp_path):
    sensor(tmp_path, "class/thermal/thermal_zone0/temp", "45678\n")
    metric = CpuTemperature(refresh_interval=0, sysfs_root=tmp_path)
    assert (metric.name, metric.unit, metric.higher_is_better) == ("CPU Temperature", "°C", False)
    assert metric.update(None, metadata()).serialize() == "45.68,1"
    sensor(tmp_path, "class/thermal/thermal_zone0/temp", "51000\n")  # the next reading
    assert float(metric.update(None, metadata()).value) == 51.0
    assert float(metric.value()) == 51.0


def test_falls_back_to_the_first_hardware_monitor(tmp_path):
    sensor(tmp_path, "class/hwmon/hwmon0/temp1_input", "38500")
    assert float(CpuTemperature(sysfs_root=tmp_path).value()) == 38.5


def test_without_a_sensor_it_logs_nan_and_says_so_once(tmp_path):
    with pytest.warns(RuntimeWarning, match="no CPU temperature sensor.*logs NaN"):
        metric = CpuTemperature(refresh_interval=0, sysfs_root=tmp_path)
    assert math.isnan(float(metric.value()))
    assert metric.update(None, metadata()).serialize() == "NaN,1"  # Burn logs `NaN` too
    sensor(tmp_path, "class/thermal/thermal_zone0/temp", "not a number")
    assert math.isnan(float(metric.update(None, metadata()).value))  # no second warning


def test_this_machine_gives_a_reading_exactly_when_it_has_a_sensor(recwarn):
    readable = any(
        _parses(Path("/sys") / relative)
        for relative in ("class/thermal/thermal_zone0/temp", "class/hwmon/hwmon0/temp1_input")
    )
    value = float(CpuTemperature().value())
    assert math.isfinite(value) == readable
    assert bool([w for w in recwarn if "sensor" in str(w.message)]) != readable


def _parses(path: Path) -> bool:
    try:
        float(path.read_text())
    except (OSError, ValueError):
        return False
    return True

"""Loading is memory-mapped: a model loads from a Burnpack file without a second copy of it
in memory (each tensor's mapped pages are dropped once copied into the module)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("psutil")
SCRIPT = Path(__file__).with_name("rss_load.py")
SIZE_MB = 128


def run(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.mark.skipif(sys.platform != "linux", reason="RSS of file mappings as Linux counts it")
def test_loading_does_not_double_memory(tmp_path):
    path = tmp_path / "big.bpk"
    run("save", str(path), str(SIZE_MB))
    assert path.stat().st_size > SIZE_MB * 1024 * 1024
    report = json.loads(run("load", str(path), str(SIZE_MB)))
    size = report["model_bytes"]
    assert report["correct"] and report["applied"] == 8
    # A loader that read the file (or kept its mapped pages) would add `size` bytes; this one
    # adds at most about one tensor (size / 8) at a time.
    assert report["peak_after"] - max(report["rss_before"], report["peak_before"]) < size / 4
    assert report["rss_after"] - report["rss_before"] < size / 4

"""Long runs' logs: `burnish summary` and `burnish report` give the numbers a naive line-by-line
reader gives, in memory that does not grow with the number of lines, without importing torch."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from burnish.cli.report import metric_curves
from burnish.cli.svg import downsample
from burnish.train.metric.base import NumericEntry
from burnish.train.report.summary import LearnerSummary

SPLITS = ("train", "valid")


def write_log(path: Path, values: np.ndarray, counts: np.ndarray, tail: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{v!r},{c}\n" for v, c in zip(values.tolist(), counts.tolist())]
    path.write_text("".join(lines) + tail, encoding="utf-8")


def naive_entries(path: Path) -> list[NumericEntry]:
    """The reference reader: the whole file, one `NumericEntry` per complete line."""
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").split("\n")[:-1]
    return [NumericEntry.deserialize(line) for line in lines if line]


def naive_mean(entries: list[NumericEntry]) -> float | None:
    count = sum(e.count for e in entries)
    return sum(e.value * e.count for e in entries) / count if count else None


def naive_curve(directory: Path, split: str, epochs: int) -> list[tuple[float, float]]:
    """Today's report without streaming: every point, then `svg.downsample`'s thinning.
    Training's batches spread over their epoch; a validation's all stand at its epoch's end."""
    points = []
    for epoch in range(1, epochs + 1):
        entries = naive_entries(directory / split / f"epoch-{epoch}" / "Loss.log")
        start = epoch if split == "valid" else epoch - 1
        points += [
            (start + (epoch - start) * (k + 1) / len(entries), e.value)
            for k, e in enumerate(entries)
        ]
    return downsample(points)


def close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == pytest.approx(b, rel=1e-9, abs=1e-12)


@st.composite
def runs(draw):
    """Per split, per epoch: a number of lines (0: an empty epoch, None: no file)."""
    epochs = draw(st.integers(min_value=1, max_value=3))
    sizes = {
        split: [
            draw(st.one_of(st.none(), st.integers(0, 900), st.just(2500))) for _ in range(epochs)
        ]
        for split in SPLITS
    }
    return (
        epochs,
        sizes,
        draw(st.integers(0, 2**32 - 1)),
        draw(st.booleans()),  # special values (NaN, inf) among the values
        draw(st.sampled_from(["", "0.5", "0.25,1"])),  # the train log's cut-short last line
    )


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(run=runs())
def test_summary_and_report_numbers_equal_a_naive_reader(tmp_path_factory, run):
    epochs, sizes, seed, special, tail = run
    directory = tmp_path_factory.mktemp("run")
    rng = np.random.default_rng(seed)
    for split in SPLITS:
        for epoch, size in enumerate(sizes[split], start=1):
            folder = directory / split / f"epoch-{epoch}"
            folder.mkdir(parents=True, exist_ok=True)
            if size is None:
                continue
            values = rng.normal(size=size) * 10.0 ** rng.integers(-5, 5)
            if special and size:
                values[rng.integers(0, size, 3)] = rng.choice([np.nan, np.inf, -np.inf], 3)
            counts = rng.integers(1, 64, size)
            last = split == "train" and epoch == epochs
            write_log(folder / "Loss.log", values, counts, tail if last else "")
            (folder / "Note.log").write_text("a text metric\n" * 3, encoding="utf-8")
    summary = LearnerSummary.from_dir(directory)
    curves = {c.name: c for c in metric_curves(directory, summary)}
    for split in SPLITS:
        found = {m.name: m for m in getattr(summary.metrics, split)}
        assert "Note" not in found  # a text metric is left out
        expected = {}
        for epoch in range(1, epochs + 1):
            mean = naive_mean(naive_entries(directory / split / f"epoch-{epoch}" / "Loss.log"))
            if mean is not None:
                expected[epoch] = mean
        entries = found["Loss"].entries if "Loss" in found else []
        assert [e.step for e in entries] == list(expected)
        assert all(close(e.value, expected[e.step]) for e in entries)
        if "Loss" not in curves:
            assert not expected
            continue
        points = curves["Loss"].iterations[split]
        reference = naive_curve(directory, split, epochs)
        assert len(points) == len(reference)
        assert all(close(x, u) and close(y, v) for (x, y), (u, v) in zip(points, reference))


def generated_run(directory: Path, lines: int) -> Path:
    """A run whose `train/epoch-1/Loss.log` holds `lines` lines (no aggregates: an old run, the
    case that reads every line)."""
    rng = np.random.default_rng(0)
    path = directory / "train" / "epoch-1" / "Loss.log"
    values = rng.random(lines)
    write_log(path, values, np.full(lines, 32))
    return directory


# The command, then its own peak resident memory: VmHWM of this process image (`ru_maxrss`
# would also count the memory of the test process it was forked from).
PEAK = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            print('PEAK-KIB', line.split()[1])\n"
    "atexit.register(peak)\n"
    "sys.argv = ['burnish', *sys.argv[1:]]\n"
    "runpy.run_module('burnish', run_name='__main__')\n"
)


def peak_rss_kib(*args: str) -> tuple[int, str]:
    """Run `burnish ARGS` in a fresh process: its peak RSS (KiB) and stdout."""
    env = {**os.environ, "COLUMNS": "120"}
    result = subprocess.run(
        [sys.executable, "-c", PEAK, *args], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    peaks = [int(line.split()[1]) for line in result.stdout.splitlines() if "PEAK-KIB" in line]
    return peaks[-1], result.stdout


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM")
@pytest.mark.parametrize("command", ["summary", "report"])
def test_memory_does_not_grow_with_the_number_of_lines(tmp_path, command):
    """10^5 and 10^6 lines: the same peak memory within a margin (reading every line into
    objects, ~300 bytes each, took 270 MB more for the larger run)."""
    small = generated_run(tmp_path / "small", 10**5)
    large = generated_run(tmp_path / "large", 10**6)
    small_rss, _ = peak_rss_kib(command, str(small))
    large_rss, output = peak_rss_kib(command, str(large))
    if command == "summary":
        assert "| Train | Loss" in output
    assert large_rss - small_rss < 25 * 1024, (small_rss, large_rss)


def test_summary_and_report_do_not_import_torch(tmp_path):
    """Reading logs needs no torch: `burnish summary` and `burnish report` start fast."""
    run = generated_run(tmp_path / "run", 10)
    code = (
        "import sys\n"
        "from burnish.cli.main import main\n"
        f"assert main(['summary', {str(run)!r}]) == 0\n"
        f"assert main(['report', {str(run)!r}]) == 0\n"
        "print('torch imported' if 'torch' in sys.modules else 'no torch')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.splitlines()[-1] == "no torch", result.stdout + result.stderr

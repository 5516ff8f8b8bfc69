"""Reading long runs' logs: `burnish summary DIR` and `burnish report DIR` on generated runs.

Each run has `train/epoch-1/Loss.log` and `Accuracy.log` of N lines each (Burn's
`value,count` lines, random values as a learner writes them) and no `aggregates.json`: a run
from before burnish kept epoch aggregates, the case that reads every line. N goes over
10^4, 10^5, 10^6 (`--iterations N` sets the largest, e.g. 10000000). Every measurement is the
whole command in a fresh process (interpreter start included): its wall time and its own
peak RSS (the process's VmHWM). Time should grow linearly with N and memory stay flat. Targets
(issue 26, at N = 10^6 on this 2-core machine): summary <= 1.5 s and <= 150 MB, report <= 2.5 s and
<= 200 MB.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness

COMMANDS = ("summary", "report")
TARGETS = {("summary", 10**6): (1.5, 150.0), ("report", 10**6): (2.5, 200.0)}


def sizes(settings: harness.Settings) -> list[int]:
    largest = settings.iterations if (settings.iterations or 0) >= 10**4 else 10**6
    found = [10**k for k in range(4, 8) if 10**k <= largest]
    return found[:2] if settings.quick else found


def write_run(directory: Path, lines: int, seed: int = 0) -> Path:
    """A run of `lines` iterations: `train/epoch-1/{Loss,Accuracy}.log`, in blocks."""
    rng = np.random.default_rng(seed)
    folder = directory / "train" / "epoch-1"
    folder.mkdir(parents=True, exist_ok=True)
    for name, scale in (("Loss", 3.0), ("Accuracy", 100.0)):
        with open(folder / f"{name}.log", "w", encoding="utf-8") as file:
            for start in range(0, lines, 10**6):
                values = (rng.random(min(10**6, lines - start)) * scale).tolist()
                file.write("".join(f"{value!r},32\n" for value in values))
    return directory


# Run the command in this process, then print its peak resident memory: the kernel's VmHWM of
# this process image (`ru_maxrss` would also count the parent's memory copied at fork).
_CHILD = (
    "import atexit, runpy, sys\n"
    "def peak():\n"
    "    for line in open('/proc/self/status'):\n"
    "        if line.startswith('VmHWM:'):\n"
    "            print('PEAK-KIB', line.split()[1], file=sys.stderr)\n"
    "atexit.register(peak)\n"
    "sys.argv = ['burnish', *sys.argv[1:]]\n"
    "runpy.run_module('burnish', run_name='__main__')\n"
)


def measure(command: str, directory: Path) -> dict[str, float]:
    """`burnish COMMAND DIR` in a fresh process: seconds and its own peak RSS (MiB)."""
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, command, str(directory)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=harness.child_env(1),
        cwd=harness.REPO,
        check=False,
    )
    seconds = time.perf_counter() - start
    peaks = [line.split()[1] for line in result.stderr.splitlines() if line.startswith("PEAK-KIB")]
    if result.returncode != 0 or not peaks:
        raise harness.ChildError(f"burnish {command} {directory}: {result.stderr[-2000:]}")
    return {"seconds": seconds, "max_rss_mib": int(peaks[-1]) / 1024}


def run(settings: harness.Settings, log) -> list[harness.Row]:
    rows: list[harness.Row] = []
    with tempfile.TemporaryDirectory() as scratch:
        for lines in sizes(settings):
            directory = write_run(Path(scratch) / f"run-{lines}", lines)
            log(f"log_reading: {lines} lines x 2 metrics, {settings.runs} runs")
            contenders = {
                command: (lambda command=command, run=directory: measure(command, run))
                for command in COMMANDS
            }
            results = harness.alternate(contenders, settings.runs, log)
            for command in COMMANDS:
                rows += _rows(command, lines, results[command])
    return rows


def _rows(command: str, lines: int, results: list[dict[str, float]]) -> list[harness.Row]:
    benchmark = f"log_reading (2 x {lines:.0e} lines)"
    limits = TARGETS.get((command, lines))
    rows = []
    for key, measure, unit, index in (
        ("seconds", "wall time", "s", 0),
        ("max_rss_mib", "peak RSS", "MiB", 1),
    ):
        values = [r[key] for r in results]
        row = harness.Row(
            benchmark, f"burnish {command}", measure, unit, harness.median(values), values
        )
        if limits is not None and row.median is not None:
            limit = limits[index] if index == 0 else limits[index] * 1e6 / 2**20  # MB -> MiB
            row.target = f"<= {limits[index]:g} {'s' if index == 0 else 'MB'}"
            row.ok = row.median <= limit
        rows.append(row)
    return rows

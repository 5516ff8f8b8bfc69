"""Shared machinery: run contenders in fresh subprocesses, alternating, and summarise them.

Every measured run is a new `python -m benchmarks.<module> child ...` process, so no contender
inherits another's warm caches, allocator state or imported modules. Runs alternate
(A B C A B C ...) so that load from other users of the machine hits every contender alike;
the median of the runs is reported. Peak resident memory of each run comes from
`os.wait4` (the kernel's `ru_maxrss` of that one child, in KiB on Linux).
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MARKER = "BENCH-RESULT "


@dataclasses.dataclass
class Settings:
    """What every benchmark is told: how many runs, threads, and whether to be quick."""

    runs: int = 5
    threads: int = 1
    quick: bool = False
    iterations: int | None = None  # overrides the benchmark's default number of iterations
    lightning: bool = True  # run the informational Lightning contender when installed
    device: str | None = None  # `--device`: overhead and time_to_accuracy run benchmarks.device
    models: tuple[str, ...] | None = None  # `--models`: which of benchmarks.device's models
    lengths: tuple[int, int] | None = None  # `--lengths`: overhead per iteration and per fit
    contenders: tuple[str, ...] | None = None  # `--contenders`: a selection of benchmarks.device's


@dataclasses.dataclass
class Row:
    """One line of the results table: a contender's median on one measure."""

    benchmark: str
    contender: str
    measure: str
    unit: str
    median: float | None
    runs: list[float]
    ratio: float | None = None  # median / the baseline's median
    target: str = ""  # e.g. "<= 1.03"
    ok: bool | None = None  # whether the target is met (None: no target)
    note: str = ""


class ChildError(RuntimeError):
    """A benchmark subprocess failed; the message holds the end of its output."""


def lightning_available() -> bool:
    """Whether PyTorch Lightning is installed (its contenders are informational)."""
    import importlib.util

    return importlib.util.find_spec("lightning") is not None


def child_env(threads: int) -> dict[str, str]:
    """The environment of a child: the repo's MNIST, and thread pools pinned to `threads`."""
    env = dict(os.environ)
    env.setdefault("BURNISH_DATASETS", str(REPO / "data"))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("BURNISH_RENDERER", "cli")
    return env


def run_child(argv: Sequence[str], threads: int, timeout: float = 900.0) -> dict[str, Any]:
    """Run `python <argv>` and return the JSON it printed after `MARKER`, plus `max_rss_mib`.

    Raises:
        ChildError: if the process exits non-zero, times out, or prints no result.
    """
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=child_env(threads),
        )
        try:
            _, status, usage = _wait4(proc, timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise ChildError(f"{' '.join(argv)}: timed out after {timeout:.0f} s") from None
        out.seek(0)
        text = out.read()
    return child_result(argv, os.waitstatus_to_exitcode(status), text, usage.ru_maxrss)


def child_result(argv: Sequence[str], code: int, output: str, max_rss_kib: int) -> dict[str, Any]:
    """The result a child printed after `MARKER` in `output`, plus `max_rss_mib`.

    Raises:
        ChildError: if the child exited non-zero or printed no result.
    """
    results = [line[len(MARKER) :] for line in output.splitlines() if line.startswith(MARKER)]
    if code != 0 or not results:
        raise ChildError(f"{' '.join(argv)} exited with {code}:\n{output[-3000:]}")
    result = json.loads(results[-1])
    result["max_rss_mib"] = max_rss_kib / 1024
    return result


def _wait4(proc: subprocess.Popen, timeout: float) -> tuple[int, int, Any]:
    """`os.wait4` on one child (its own rusage), with a timeout polled every 50 ms."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return pid, status, usage
        if time.monotonic() > deadline:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        time.sleep(0.05)


def report(result: dict[str, Any]) -> None:
    """Print a child's result for the parent to read (call once, at the end of the child)."""
    print(MARKER + json.dumps(result), flush=True)


def alternate(
    contenders: dict[str, Callable[[], dict[str, Any]]],
    runs: int,
    log: Callable[[str], None] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Call each contender `runs` times, in the order A B C A B C ...; their results by name."""
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in contenders}
    for run in range(runs):
        for name, contender in contenders.items():
            result = contender()
            results[name].append(result)
            if log is not None:
                log(f"  run {run + 1}/{runs} {name}: {_brief(result)}")
    return results


def _brief(result: dict[str, Any]) -> str:
    parts = [f"{k}={v:.3f}" for k, v in result.items() if isinstance(v, float)]
    return " ".join(parts)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def rows_for(
    benchmark: str,
    results: dict[str, list[dict[str, Any]]],
    key: str,
    measure: str,
    unit: str,
    baseline: str | None,
    targets: dict[str, tuple[str, Callable[[float], bool]]] | None = None,
) -> list[Row]:
    """One row per contender for `key`, with the ratio of medians to `baseline`'s."""
    targets = targets or {}
    medians = {name: median([r[key] for r in runs]) for name, runs in results.items()}
    base = medians.get(baseline) if baseline else None
    rows = []
    for name, runs in results.items():
        value = medians[name]
        ratio = value / base if base and value is not None else None
        target, check = targets.get(name, ("", None))
        ok = check(ratio) if check is not None and ratio is not None else None
        rows.append(
            Row(benchmark, name, measure, unit, value, [r[key] for r in runs], ratio, target, ok)
        )
    return rows


def at_most(limit: float) -> tuple[str, Callable[[float], bool]]:
    return f"<= {limit:g}", lambda ratio: ratio <= limit


def at_least(limit: float) -> tuple[str, Callable[[float], bool]]:
    return f">= {limit:g}", lambda ratio: ratio >= limit


def shown(median: float | None, unit: str, ratio: float | None) -> tuple[str, str]:
    """A row's median with its unit, and its ratio, as the results tables print them."""
    if median is None:
        value = "-"
    else:
        number = f"{median:.4g}" if abs(median) < 1000 else f"{median:,.0f}"
        value = f"{number} {unit}"
    return value, "-" if ratio is None else f"{ratio:.3f}"


def module_argv(module: str, *args: Any) -> list[str]:
    """`-m benchmarks.<module> child <args>` as strings."""
    return ["-m", f"benchmarks.{module}", "child", *map(str, args)]


def set_threads(threads: int) -> None:
    """Pin torch's intra-op pool (every contender calls this with the same number)."""
    import torch

    torch.set_num_threads(threads)

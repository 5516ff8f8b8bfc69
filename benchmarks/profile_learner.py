"""Where the Learner's time goes beyond the model: cProfile of the overhead benchmark's epoch.

    .venv/bin/python -m benchmarks.profile_learner [--iterations 300] [--threads 1] [--top 25]

Runs the `learner` contender of `benchmarks/overhead.py` (guide model, hidden 1024, batch 64,
Accuracy + Loss metrics, file loggers, checkpoint, CLI renderer) under cProfile and prints:
the functions of burnish (and the example's batcher) by own time, per iteration; and the
call counts that betray per-iteration work a hand loop would not do: host syncs
(`Tensor.tolist`/`item`), file writes and flushes, renderer draws.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import tempfile
from pathlib import Path

from benchmarks import harness, overhead

WATCH = {
    "host syncs (Tensor.tolist)": ("~", "<method 'tolist' of 'torch._C.TensorBase' objects>"),
    "host syncs (Tensor.item)": ("~", "<method 'item' of 'torch._C.TensorBase' objects>"),
    "file writes": ("~", "<method 'write' of '_io.TextIOWrapper' objects>"),
    "file flushes (text)": ("~", "<method 'flush' of '_io.TextIOWrapper' objects>"),
    "os.fsync": ("~", "<built-in method posix.fsync>"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    harness.set_threads(args.threads)
    workdir = Path(tempfile.mkdtemp(prefix="burnish-profile-"))
    profiler = cProfile.Profile()
    try:
        profiler.enable()
        seconds = overhead.learner(args.iterations, workdir)
        profiler.disable()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    stats = pstats.Stats(profiler)
    report(stats, seconds, args.iterations, args.top)


def report(stats: pstats.Stats, seconds: float, iterations: int, top: int) -> None:
    """Print burnish's own time per iteration and the watched call counts."""
    entries = stats.stats  # {(file, line, name): (cc, nc, tottime, cumtime, callers)}
    ours = [
        (key, value)
        for key, value in entries.items()
        if "/burnish/" in key[0] or "examples/mnist" in key[0]
    ]
    own = sum(value[2] for _, value in ours)
    print(f"fit: {seconds:.2f} s for {iterations} iterations (under cProfile)")
    print(f"burnish + batcher own time: {own:.3f} s = {own / iterations * 1e3:.3f} ms/iteration")
    print(f"\n{'own ms/it':>9} {'cum ms/it':>9} {'calls':>7}  function")
    ours.sort(key=lambda kv: kv[1][2], reverse=True)
    for (file, line, name), (_, calls, tottime, cumtime, _) in ours[:top]:
        short = file.split("/burnish/")[-1] if "/burnish/" in file else file.split("/")[-1]
        print(
            f"{tottime / iterations * 1e3:9.4f} {cumtime / iterations * 1e3:9.4f} "
            f"{calls:7d}  {short}:{line} {name}"
        )
    print()
    for label, (file, name) in WATCH.items():
        calls = sum(v[1] for k, v in entries.items() if k[0] == file and k[2] == name)
        print(f"{label:28} {calls:6d} calls ({calls / iterations:.3f} per iteration)")
    draws = sum(v[1] for k, v in entries.items() if k[2] == "render" and "renderer" in k[0])
    print(f"{'renderer.render':28} {draws:6d} calls")


if __name__ == "__main__":
    main()

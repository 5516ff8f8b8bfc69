"""Save + load time and file size of each recorder, as ratios to `torch.save` / safetensors.

    .venv/bin/python -m benchmarks.recorder_timing [--runs 5] [--sizes 1M 25M] [--json]

For a ~1M and a ~25M parameter MLP, each recorder saves the model's record to a file and
loads it back (`recorder.load`), timed together. Runs alternate between the candidates
(A B C ... A B C ...) so machine noise hits all of them alike; the median is reported.
Baselines: `torch.save` + `torch.load(weights_only=True)` and safetensors'
`save_file` + `load_file`. burnish recorders fsync every file (atomic writes), the
baselines do not, which costs burnish a little on every save.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import safetensors.torch
import torch
from torch import nn

import burnish as bn
from burnish.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
)

SIZES = {"1M": (512, 4), "25M": (2560, 4)}  # (width, depth) of a square-ish MLP
#: JSON turns every element into text: only timed on the small model.
SLOW = {"PrettyJsonFileRecorder", "JsonGzFileRecorder"}


def model(width: int, depth: int) -> nn.Module:
    bn.seed(0)
    layers = [nn.Linear(width, width) for _ in range(depth)]
    return nn.Sequential(*layers)


def candidates(record: dict, directory: Path, big: bool) -> dict[str, Callable[[], Path]]:
    def torch_baseline() -> Path:
        path = directory / "torch.pt"
        torch.save(record, path)
        torch.load(path, weights_only=True)
        return path

    def safetensors_baseline() -> Path:
        path = directory / "st.safetensors"
        safetensors.torch.save_file(record, path)
        safetensors.torch.load_file(path)
        return path

    out: dict[str, Callable[[], Path]] = {
        "torch.save": torch_baseline,
        "safetensors": safetensors_baseline,
    }
    recorders = [CompactRecorder(), DefaultRecorder(), NamedMpkGzFileRecorder(),
                 BinFileRecorder(), BinGzFileRecorder(), SafetensorsFileRecorder(),
                 PrettyJsonFileRecorder(), JsonGzFileRecorder()]  # fmt: skip
    for recorder in recorders:
        name = type(recorder).__name__
        if big and name in SLOW:
            continue

        def run(recorder=recorder) -> Path:
            path = recorder.record(record, directory / "model")
            recorder.load(path)
            return path

        out[name] = run
    return out


def measure(size: str, runs: int) -> list[tuple[str, float, int]]:
    net = model(*SIZES[size])
    record = {k: v.contiguous() for k, v in net.state_dict().items()}
    with tempfile.TemporaryDirectory() as tmp:
        funcs = candidates(record, Path(tmp), big=size != "1M")
        times: dict[str, list[float]] = {name: [] for name in funcs}
        sizes: dict[str, int] = {}
        for name, func in funcs.items():  # warm-up, and file sizes
            sizes[name] = func().stat().st_size
        for _ in range(runs):
            for name, func in funcs.items():
                start = time.perf_counter()
                func()
                times[name].append(time.perf_counter() - start)
    print(f"\n{size}: {bn.num_params(net):,} parameters, {runs} runs (median)")
    return [(name, statistics.median(times[name]), sizes[name]) for name in funcs]


def report(rows: list[tuple[str, float, int]]) -> None:
    base_time, base_size = rows[0][1], rows[0][2]
    st_time, st_size = rows[1][1], rows[1][2]
    print(f"{'candidate':26} {'save+load':>10} {'vs torch':>9} {'vs st':>7} "
          f"{'size MB':>9} {'vs torch':>9} {'vs st':>7}")  # fmt: skip
    for name, seconds, size in rows:
        print(
            f"{name:26} {seconds * 1e3:8.1f}ms {seconds / base_time:8.2f}x "
            f"{seconds / st_time:6.2f}x {size / 1e6:9.2f} {size / base_size:8.2f}x "
            f"{size / st_size:6.2f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", nargs="+", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()
    torch.set_num_threads(1)
    for size in args.sizes:
        report(measure(size, args.runs))


if __name__ == "__main__":
    main()

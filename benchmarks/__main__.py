"""burnish's performance benchmarks: one command, a table, and `benchmarks/results.json`.

    .venv/bin/python -m benchmarks                      # everything (several minutes)
    .venv/bin/python -m benchmarks --quick              # fewer iterations and runs
    .venv/bin/python -m benchmarks -b overhead startup  # a selection

Each benchmark runs its contenders in fresh subprocesses, alternating A B A B ..., and reports
the median of the runs and its ratio to the plain-PyTorch baseline. See BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path

from benchmarks import harness
from benchmarks.device_loops import CONTENDERS

NAMES = (
    "overhead",
    "many_tensors",
    "time_to_accuracy",
    "loading",
    "startup",
    "records",
    "distributed_overlap",
    "compile",
    "async_checkpoint",
    "log_reading",
    "language_model",
)
#: Opt-in (`-b NAME`): slow on 2 cores.
OPT_IN = ("compile", "async_checkpoint")


def _module(name: str):
    import importlib

    return importlib.import_module(f"benchmarks.{name}")


def machine() -> dict[str, str | int]:
    """nproc, CPU model and instruction set, Python and torch versions, and the load when the
    run started."""
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import torch

    from burnish.capability import cpu_instruction_set

    return {
        "nproc": os.cpu_count() or 0,
        "cpu": f"{cpu} ({cpu_instruction_set()})",  # a time holds for this instruction set
        "python": platform.python_version(),
        "torch": torch.__version__,
        "platform": platform.platform(),
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def table(rows: list[harness.Row]) -> str:
    """A fixed-width table of the rows, in the order given."""
    lines = [
        f"{'benchmark':24} {'contender':22} {'measure':14} {'median':>12} {'runs':>4} "
        f"{'ratio':>7} {'target':>16} {'ok':>4}  note"
    ]
    for r in rows:
        value, ratio = harness.shown(r.median, r.unit, r.ratio)
        ok = {True: "yes", False: "NO", None: ""}[r.ok]
        lines.append(
            f"{r.benchmark:24} {r.contender:22} {r.measure:14} {value:>12} {len(r.runs):>4} "
            f"{ratio:>7} {r.target:>16} {ok:>4}  {r.note}"
        )
    return "\n".join(lines)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-b",
        "--benchmarks",
        nargs="+",
        choices=NAMES,
        metavar="NAME",
        help=f"which to run (default: all but {', '.join(OPT_IN)}): {', '.join(NAMES)}",
    )
    parser.add_argument("--quick", action="store_true", help="fewer iterations and runs")
    parser.add_argument("--runs", type=int, help="runs per contender (default 5, quick 3)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads in every contender (default 1)",
    )
    parser.add_argument(
        "--iterations", type=int, help="training iterations of the overhead benchmark (default 300)"
    )
    parser.add_argument("--no-lightning", action="store_true", help="skip the Lightning contender")
    parser.add_argument(
        "--device",
        help="run overhead and time_to_accuracy on this device (cuda, cpu) with the data on it: "
        "guide model, ResNet-18 and the language model's GPT, "
        "eager/custom/Learner/bf16/CUDA-graph contenders "
        "(benchmarks/device.py); default: the CPU benchmarks",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=("guide", "resnet18", "gpt"),
        help="with --device: which models to run (default: all three)",
    )
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=CONTENDERS,
        help="with --device: which contenders to run (default: all; plain always runs, "
        "as the baseline)",
    )
    parser.add_argument(
        "--lengths",
        nargs=2,
        type=int,
        metavar=("SHORT", "LONG"),
        help="with --device, overhead only: run every contender for SHORT and for LONG "
        "iterations and report its time per iteration (the slope, which the targets hold) "
        "and its fixed cost per fit (the intercept), e.g. --lengths 300 3000",
    )
    parser.add_argument("--output", type=Path, default=Path(__file__).parent / "results.json")
    args = parser.parse_args(argv)
    if args.lengths is not None:
        short, long = args.lengths
        if not 0 < short < long:
            parser.error(
                f"--lengths takes two iteration counts, the shorter first: not {short} {long}"
            )
        if args.device is None:
            parser.error(
                "--lengths needs --device (the CPU overhead benchmark's epoch is MNIST's 937 "
                "batches at most); to measure it on this CPU: --device cpu --lengths 300 3000"
            )
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    names = args.benchmarks or [n for n in NAMES if n not in OPT_IN]
    runs = args.runs or (3 if args.quick else 5)
    settings = harness.Settings(
        runs,
        args.threads,
        args.quick,
        args.iterations,
        not args.no_lightning,
        args.device,
        tuple(args.models) if args.models else None,
        tuple(args.lengths) if args.lengths else None,
        tuple(args.contenders) if args.contenders else None,
    )
    info = machine()
    print(
        f"machine: {info['nproc']} CPUs, {info['cpu']}, torch {info['torch']}, "
        f"load {info['load_average']}; {runs} runs, {args.threads} thread(s)",
        flush=True,
    )
    started = time.perf_counter()
    rows: list[harness.Row] = []
    failures: dict[str, str] = {}
    for name in names:
        try:
            rows += _module(name).run(settings, _log)
        except Exception as error:  # one broken benchmark must not stop the rest
            failures[name] = "".join(traceback.format_exception_only(error)).strip()
            print(f"{name} FAILED:\n{traceback.format_exc()}", file=sys.stderr, flush=True)
    print("\n" + table(rows))
    result = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(
            ["python -m benchmarks", *(argv if argv is not None else sys.argv[1:])]
        ),
        "machine": info,
        "settings": {
            "runs": runs,
            "threads": args.threads,
            "quick": args.quick,
            "iterations": args.iterations,
            "benchmarks": names,
            "device": args.device,
            "models": args.models,
            "lengths": args.lengths,
            "contenders": args.contenders,
        },
        "seconds": round(time.perf_counter() - started, 1),
        "rows": [vars(row) for row in rows],
        "failures": failures,
    }
    from burnish.io import atomic_write_bytes

    atomic_write_bytes(args.output, (json.dumps(result, indent=2) + "\n").encode())
    print(f"\nwrote {args.output} ({result['seconds']} s)")
    return 1 if failures else 0


def _log(message: str) -> None:
    print(message, flush=True)


if __name__ == "__main__":
    sys.exit(main())

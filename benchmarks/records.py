"""The records benchmark (`benchmarks/recorder_timing.py`) as rows of the table.

`recorder_timing.measure(size, runs)` times save + load of a model record with each recorder,
alternating candidates in one process, against `torch.save`/`torch.load` and safetensors;
this module runs it in a child process and turns its medians into rows (ratio to
`torch.save`). Skipped, with a note, when `benchmarks/recorder_timing.py` has no `measure`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys

from benchmarks import harness


def run(settings: harness.Settings, log) -> list[harness.Row]:
    from benchmarks import recorder_timing

    if not callable(getattr(recorder_timing, "measure", None)):
        return [harness.Row("records", "-", "save+load", "s", None, [], note="no entry point")]
    sizes = ["1M"] if settings.quick else ["1M", "25M"]
    log(f"records: sizes {sizes}, {settings.runs} runs (alternating inside one process)")
    argv = ["-m", "benchmarks.records", "child", "--runs", str(settings.runs), *sizes]
    result = harness.run_child(argv, settings.threads)
    rows = []
    for size, measured in result["sizes"].items():
        base = measured[0][1]
        for name, seconds, size_bytes in measured:
            rows.append(
                harness.Row(
                    f"records {size}",
                    name,
                    "save+load",
                    "s",
                    seconds,
                    [seconds],
                    ratio=seconds / base,
                    note=f"{size_bytes / 1e6:.2f} MB ({size_bytes / measured[0][2]:.2f}x); "
                    f"median of {settings.runs} runs in one process",
                )
            )
    return rows


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.records child")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("sizes", nargs="+")
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    from benchmarks import recorder_timing

    out: dict[str, list] = {}
    for size in args.sizes:
        with contextlib.redirect_stdout(io.StringIO()):
            out[size] = [list(row) for row in recorder_timing.measure(size, args.runs)]
    harness.report({"sizes": out})


if __name__ == "__main__":
    child(sys.argv[2:])

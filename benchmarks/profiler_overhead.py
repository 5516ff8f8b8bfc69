"""What `profile(steps=range(10, 20))` costs a fit of the guide model on the CPU.

The overhead benchmark's Learner (guide model, hidden 1024, batch 64, Accuracy + Loss, file
logs, a checkpoint, the CLI renderer) trains `--iterations` steps of MNIST, with and without
profiling steps 10-19, alternated `--runs` times in this process. A listener notes the loop
thread's CPU time at the end of each training step (in both contenders), so each step's time is
the interval between two ends: with one torch thread and the data loaded in the loop's thread,
the step's whole work, and little moved by other processes on a loaded machine (the fit's time
is wall-clock). Medians over the runs:

  plain step     steps outside the window (2-8 and 21 on; step 1 warms the caches up)
  warm-up step   step 9: the profiler is made, not recording (the first profiler of a process
                 starts Kineto, seconds: printed apart, the median leaves it out from 3 runs)
  window step    steps 10-19, recorded
  step 20        step 20 and the profile written before it, at step 19's end (the trace
                 exported, copied for TensorBoard, the table of top operations made)
  fit            the whole fit (train, validation, checkpoint)

    .venv/bin/python -m benchmarks.profiler_overhead [--iterations 60] [--runs 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks import harness, overhead

WINDOW = range(10, 20)


@dataclasses.dataclass
class Fit:
    """One fit: its wall-clock seconds, each step's CPU seconds (the loop's thread), the size
    of its trace (MiB, 0 without)."""

    seconds: float
    steps: dict[int, float]
    trace_mib: float


def fit(iterations: int, workdir: Path, profiled: bool) -> Fit:
    """One fit of the overhead benchmark's Learner, timed step by step."""
    from benchmarks.models import learner_builder
    from burnish.optim import AdamConfig
    from burnish.record import CompactRecorder
    from burnish.train import TrainingListener

    ends: dict[int, float] = {}

    class StepEnds(TrainingListener):
        def on_iteration_end(self, event):
            if str(event.split) == "train":
                ends[event.step] = time.thread_time()

    train_set, valid_set, _, _ = overhead._data(iterations)
    loader_train, loader_valid = overhead._loaders(train_set, valid_set)
    builder = (
        learner_builder(workdir).with_file_checkpointer(CompactRecorder()).with_listener(StepEnds())
    )
    if profiled:
        builder = builder.profile(steps=WINDOW)
    learner = builder.build(overhead._model(), AdamConfig().init(), overhead.LR)
    start = time.perf_counter()
    learner.fit(loader_train, loader_valid)
    seconds = time.perf_counter() - start
    steps = {step: ends[step] - ends[step - 1] for step in sorted(ends) if step - 1 in ends}
    trace = workdir / "profile" / "trace.json"
    return Fit(seconds, steps, trace.stat().st_size / 2**20 if profiled else 0.0)


PARTS: dict[str, Callable[[int], bool]] = {
    "plain step": lambda s: 1 < s < WINDOW.start - 1 or s > WINDOW.stop,
    "warm-up step": lambda s: s == WINDOW.start - 1,
    "window step": lambda s: s in WINDOW,
    "step 20": lambda s: s == WINDOW.stop,
}


def summary(fits: Sequence[Fit]) -> dict[str, float]:
    """Medians over `fits`: the fit's seconds, each part's step seconds, the trace's MiB."""
    found = {"fit": statistics.median(f.seconds for f in fits)}
    for part, chosen in PARTS.items():
        found[part] = statistics.median(t for f in fits for s, t in f.steps.items() if chosen(s))
    found["trace MiB"] = statistics.median(f.trace_mib for f in fits)
    return found


def table(off: dict[str, float], on: dict[str, float]) -> list[str]:
    """Markdown rows: each measure without and with profiling, and the difference."""
    head = "| measure (steps: CPU time) | without | with profile(range(10, 20)) | difference |"
    lines = [head, "|---|---|---|---|"]
    for key in off:
        if key == "trace MiB":
            lines.append(f"| trace.json | - | {on[key]:.2f} MiB | |")
            continue
        scale, unit = (1.0, "s") if key == "fit" else (1e3, "ms")
        lines.append(
            f"| {key} | {off[key] * scale:.1f} {unit} | {on[key] * scale:.1f} {unit} | "
            f"{(on[key] - off[key]) * scale:+.1f} {unit} |"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    if args.iterations <= WINDOW.stop + 1:
        parser.error(f"--iterations must be over {WINDOW.stop + 1} (the window is 10-19)")
    harness.set_threads(args.threads)
    fits: dict[bool, list[Fit]] = {False: [], True: []}
    for _ in range(args.runs):
        for profiled in (False, True):
            workdir = Path(tempfile.mkdtemp(prefix="burnish-profiler-"))
            try:
                fits[profiled].append(fit(args.iterations, workdir, profiled))
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    print(
        f"guide model, {args.iterations} steps of batch 64, {args.threads} thread(s), "
        f"median of {args.runs}"
    )
    print("\n".join(table(summary(fits[False]), summary(fits[True]))))
    first = fits[True][0].steps[WINDOW.start - 1]
    print(f"the first profiled fit's warm-up step (the process's first profiler): {first:.2f} s")


if __name__ == "__main__":
    main()

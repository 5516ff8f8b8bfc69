"""Preemption: seconds from SIGTERM to the process's exit, checkpoint included.

The ~50M-parameter MLP of `async_checkpoint.py` (Adam: ~600 MB of state per checkpoint,
`DefaultRecorder`) trains on CPU with `checkpoint_every(6)` in a child process of its own
process group. The worst case: the signal comes at iteration 7, just after the checkpoint of
iteration 6 was handed to the background writer, so the stop first finishes that write, then
commits its own checkpoint at the next boundary, then exits. The parent waits for the child's
marker line, sends SIGTERM to the group (as `scancel` does) and times until the exit. Target:
within a 30 s grace period.

    .venv/bin/python -m benchmarks.preemption_exit [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRACE_SECONDS = 30.0
MARK_AT = 7  # the iteration after a checkpoint_every(6) save: a write is in flight


def signal_to_exit(workdir: Path) -> tuple[float, int]:
    """One child: seconds from SIGTERM to its exit, and its exit code."""
    command = [sys.executable, "-m", "benchmarks.preemption_exit", "child", str(workdir)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "MARK":
            break
    start = time.perf_counter()
    os.killpg(process.pid, signal.SIGTERM)
    code = process.wait(timeout=600)
    return time.perf_counter() - start, code


def child(workdir: Path) -> None:
    from benchmarks import harness
    from benchmarks.async_checkpoint import _batches, _model
    from burnish.optim import AdamConfig
    from burnish.record import DefaultRecorder
    from burnish.train import LearnerBuilder, TrainingListener
    from burnish.train.renderer import NullRenderer

    harness.set_threads(1)

    class Mark(TrainingListener):
        def on_iteration_end(self, event):
            if event.split == "train" and event.iteration == MARK_AT:
                print("MARK", flush=True)

    learner = (
        LearnerBuilder(workdir)
        .with_file_checkpointer(DefaultRecorder())
        .checkpoint_every(6)
        .num_epochs(1)
        .renderer(NullRenderer())
        .with_listener(Mark())
        .build(_model(), AdamConfig().init(), 1e-4)
    )
    learner.fit(_batches(60), _batches(1))


def main() -> None:
    if sys.argv[1:2] == ["child"]:
        child(Path(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(prog="benchmarks.preemption_exit")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    seconds = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="burnish-preempt-") as tmp:
            elapsed, code = signal_to_exit(Path(tmp))
        assert code == 143, f"the child exited with {code}, not 143 (preempted)"
        seconds.append(elapsed)
        print(f"run {run + 1}: SIGTERM to exit {elapsed:.2f} s (exit code {code})", flush=True)
    median = statistics.median(seconds)
    verdict = "fits" if max(seconds) <= GRACE_SECONDS else "does NOT fit"
    print(
        f"median {median:.2f} s, max {max(seconds):.2f} s: {verdict} a {GRACE_SECONDS:.0f} s grace"
    )


if __name__ == "__main__":
    main()

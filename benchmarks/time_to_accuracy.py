"""Time to 99% MNIST test accuracy: the Learner vs the same recipe by hand.

Runs `examples/time_to_accuracy.py`'s two versions (`train_learner`, `train_plain`) in fresh
processes, alternating. Both see the same batches from the same initial weights and stop after
the first epoch whose test accuracy is >= 99.0%. Target: learner / plain <= 1.05 (medians).
With `--quick` the schedule spans one epoch and the target may not be reached: the ratio
then compares one epoch of each.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchmarks import harness


def run(settings: harness.Settings, log) -> list[harness.Row]:
    if settings.device is not None:  # --device: the accelerator version, data on the device
        from benchmarks import device

        return device.run(settings, log, "time_to_accuracy")
    epochs = 1 if settings.quick else 2
    contenders = {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv(
                    "time_to_accuracy", name, "--epochs", epochs, "--threads", settings.threads
                ),
                settings.threads,
            )
        )
        for name in ("plain", "learner")
    }
    log(f"time to accuracy: schedule over {epochs} epoch(s), {settings.runs} runs")
    results = harness.alternate(contenders, settings.runs, log)
    rows = harness.rows_for(
        "time to 99%",
        results,
        "seconds",
        "time",
        "s",
        "plain",
        {"learner": harness.at_most(1.05)},
    )
    for row in rows:
        runs = results[row.contender]
        reached = sum(r["accuracy"] >= 99.0 for r in runs)
        epochs_used = sorted({r["epochs"] for r in runs})
        accuracy = harness.median([r["accuracy"] for r in runs])
        row.note = f"reached {reached}/{len(runs)}, epochs {epochs_used}, acc {accuracy:.2f}%"
        if reached < len(runs) and row.ok is not None:
            row.ok = False
    return rows


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.time_to_accuracy child")
    parser.add_argument("contender", choices=("plain", "learner"))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    from examples import time_to_accuracy as tta

    config = tta.RecipeConfig().with_epochs(args.epochs)
    train = tta.train_plain if args.contender == "plain" else tta.train_learner
    with tempfile.TemporaryDirectory(prefix="burnish-tta-") as workdir:
        outcome = train(config, Path(workdir))
    harness.report(
        {"seconds": outcome.seconds, "epochs": outcome.epochs, "accuracy": outcome.accuracy}
    )


if __name__ == "__main__":
    child(sys.argv[2:])

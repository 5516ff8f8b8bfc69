"""Drive a renderer with synthetic metrics, as the learner would; used by the terminal test.

    .venv/bin/python scripts/render_demo.py                 # the dashboard (in a terminal)
    .venv/bin/python scripts/render_demo.py --renderer cli  # plain lines

Press q (or Ctrl-C) to stop: the demo finishes the current iteration, closes the renderer and
prints `render_demo: stopped (<reason>)`; a complete run prints `render_demo: finished`.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from pathlib import Path

from burnish.train.interrupter import Interrupter
from burnish.train.renderer import (
    CliMetricsRenderer,
    MetricsRenderer,
    RenderSnapshot,
    TrainingProgress,
    TuiMetricsRenderer,
    default_renderer,
)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renderer", choices=("auto", "tui", "cli"), default="auto")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=200, help="train iterations per epoch")
    parser.add_argument("--valid-iterations", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--step-s", type=float, default=0.01, help="seconds per iteration")
    parser.add_argument(
        "--hold-after-stop",
        type=Path,
        default=None,
        help="after a stop request, keep the screen up until this file exists (for tests)",
    )
    return parser.parse_args()


def make_renderer(kind: str) -> MetricsRenderer:
    if kind == "tui":
        return TuiMetricsRenderer()
    if kind == "cli":
        return CliMetricsRenderer(interval_s=1.0, every_percent=25)
    return default_renderer()


def metric_values(split: str, t: float, rng: random.Random) -> dict[str, float]:
    """Synthetic batch values at training time `t` (in epochs)."""
    gap = 0.1 if split == "valid" else 0.0
    values = {
        "Loss": (2.3 * math.exp(-0.7 * t) + 0.1 + gap) * rng.uniform(0.9, 1.1),
        "Accuracy": (100.0 - 90.0 * math.exp(-t) - 5.0 - 20 * gap) * rng.uniform(0.97, 1.0),
    }
    if split == "train":
        values["Learning Rate"] = 1e-3 * 0.8 ** int(t)
    return values


def run_split(
    renderer: MetricsRenderer,
    interrupter: Interrupter,
    args: argparse.Namespace,
    split: str,
    epoch: int,
    rng: random.Random,
) -> None:
    num_iterations = args.iterations if split == "train" else args.valid_iterations
    sums: dict[str, float] = {}
    started = time.monotonic()
    for iteration in range(1, num_iterations + 1):
        time.sleep(args.step_s)
        values = metric_values(split, epoch - 1 + iteration / num_iterations, rng)
        for name, value in values.items():
            sums[name] = sums.get(name, 0.0) + value
        if renderer.due():
            progress = TrainingProgress(
                epoch,
                args.epochs,
                iteration,
                iteration * args.batch_size,
                num_iterations * args.batch_size,
            )
            numeric = {name: (value, sums[name] / iteration) for name, value in values.items()}
            speed = iteration / max(time.monotonic() - started, 1e-9)
            text = {"Iteration Speed": f"{speed:.1f} iter/s"}
            renderer.render(RenderSnapshot(split, progress, numeric, text))
        if interrupter.should_stop():
            hold(args.hold_after_stop)
            return
    renderer.end_epoch(split, epoch, {name: total / num_iterations for name, total in sums.items()})


def hold(release: Path | None) -> None:
    """Keep the process (and its screen) up until `release` exists."""
    deadline = time.monotonic() + 60.0
    while release is not None and not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def main() -> None:
    args = parse_args()
    renderer = make_renderer(args.renderer)
    interrupter = Interrupter()
    rng = random.Random(0)
    renderer.start(args.epochs, interrupter)
    try:
        with interrupter.catch_sigint():
            for epoch in range(1, args.epochs + 1):
                for split in ("train", "valid"):
                    run_split(renderer, interrupter, args, split, epoch, rng)
                    if interrupter.should_stop():
                        break
                if interrupter.should_stop():
                    break
    finally:
        renderer.close()
    if interrupter.should_stop():
        print(f"render_demo: stopped ({interrupter.reason})", flush=True)
    else:
        print("render_demo: finished", flush=True)


if __name__ == "__main__":
    main()

"""A run that holds its artifact directory's lock for the run-lock tests, as a subprocess.

    python tests/train/lock_run.py ARTIFACT_DIR [--hold-at EPOCH] [--workers N]

It trains the test MLP for 2 epochs with a file checkpointer and `resume()`. With `--hold-at E`
the first train step of epoch E prints `holding` and waits for a line on standard input: the
test does what it must while the lock is held, then writes a line (or kills the process).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import torch  # noqa: E402

import burnish as bn  # noqa: E402
from burnish.optim import AdamConfig  # noqa: E402
from burnish.record import DefaultRecorder  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402

from tests.train.helpers import Mlp, builder, loaders  # noqa: E402


class HoldingMlp(Mlp):
    """The test model; its first step of epoch `hold_at` waits for the test."""

    def __init__(self, hold_at: int) -> None:
        super().__init__()
        self.hold_at = hold_at
        self.steps = 0

    def train_step(self, batch):
        self.steps += 1
        if self.hold_at and self.steps == (self.hold_at - 1) * 10 + 1:  # 10 batches an epoch
            print("holding", flush=True)
            sys.stdin.readline()
        return super().train_step(batch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("--hold-at", type=int, default=0)
    parser.add_argument("--workers", type=int, default=0)
    args = parser.parse_args()
    bn.seed(5)
    torch.set_num_threads(1)
    learner = (
        builder(args.artifact_dir, epochs=2, recorder=DefaultRecorder())
        .renderer(CliMetricsRenderer(file=sys.stderr))
        .deterministic()
        .resume()
        .build(HoldingMlp(args.hold_at), AdamConfig().init(), 1e-3)
    )
    train, valid = loaders(batch_size=32, train_items=320, valid_items=64, workers=args.workers)
    result = learner.fit(train, valid)
    print(f"done epochs={result.epochs_completed}", flush=True)


if __name__ == "__main__":
    main()

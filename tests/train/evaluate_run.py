"""An evaluation script for the evaluator tests that need a process of their own (torchrun, a
real terminal).

    python tests/train/evaluate_run.py DIR OUT.json [--items N] [--slow S] [--renderer cli]
    torchrun --nproc-per-node=2 tests/train/evaluate_run.py DIR OUT.json

Evaluates a seeded model (the same weights in every process) on the first N MNIST test
images in batches of 64 under the name "MNIST test"; rank 0 writes the result to OUT.json.
`--slow S` sleeps S seconds per batch (to watch the dashboard). Prints
`evaluate_run: done <interrupted>` at the end.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import burnish as bn  # noqa: E402
from burnish.data.dataloader import DataLoaderBuilder  # noqa: E402
from burnish.data.dataset import PartialDataset  # noqa: E402
from burnish.train import EvaluatorBuilder  # noqa: E402
from burnish.train.metric import AccuracyMetric, LossMetric  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402

from tests.helpers import MnistBatcher, mnist  # noqa: E402
from tests.train.helpers import Mlp  # noqa: E402


class SlowMlp(Mlp):
    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    def valid_step(self, batch):
        time.sleep(self.delay)
        return super().valid_step(batch)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("out")
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--renderer", choices=["cli", "default"], default="cli")
    args = parser.parse_args()

    bn.seed(7)
    model = SlowMlp(args.slow)
    data = PartialDataset(mnist("test"), 0, args.items)
    loader = DataLoaderBuilder(MnistBatcher()).batch_size(64).build(data)
    builder = EvaluatorBuilder(args.directory).metrics(AccuracyMetric(), LossMetric()).summary()
    if args.renderer == "cli":
        builder = builder.renderer(CliMetricsRenderer())
    result = builder.build(model).eval("MNIST test", loader)
    if int(os.environ.get("RANK", "0")) == 0:
        record = {**dataclasses.asdict(result), "directory": str(result.directory)}
        Path(args.out).write_text(json.dumps(record))
    print(f"evaluate_run: done {result.interrupted}", flush=True)


if __name__ == "__main__":
    main()

"""Per-tensor framework cost: a model of 480 small parameter tensors, trained on CPU.

A 120-block MLP (each block `Linear(64, 64)` + `LayerNorm(64)` + ReLU: 4 parameter tensors),
batch 32, mean squared error against fixed random targets, one thread. The forward and
backward passes are cheap, so any per-parameter Python work of a training loop shows.
Contenders, all on the same model, seed and pre-built batches (the timed region is one epoch
of `iterations` steps, then one validation batch):

  plain     hand loop: `torch.optim.Adam(foreach=True)`, `zero_grad(set_to_none=True)`,
            `loss.backward()`, `step()`; the loss summed on the device, read once.
  custom    burnish custom loop: `bn.backward` -> `GradientsParams.from_grads` ->
            `optim.step` with burnish's `Adam`, the same loss sum.
  learner   burnish `Learner`: train and valid `LossMetric`, file metric loggers, the
            experiment log, `CliMetricsRenderer`, no checkpoint.

Each contender reports the wall time and the process CPU time of its epoch; on a machine
shared with other work the CPU time is the steadier of the two (one thread: it counts the
work done, not the time spent waiting for a core).

    .venv/bin/python -m benchmarks -b many_tensors
    .venv/bin/python -m benchmarks.many_tensors child learner --iterations 300 --threads 1
    .venv/bin/python -m benchmarks.many_tensors child learner --iterations 3000 --blocks 1 \
        --width 8 --batch 4     # a step with almost no arithmetic: the loop's own host time
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

BLOCKS, WIDTH, BATCH, LR, SEED = 120, 64, 32, 1e-4, 42
CONTENDERS = ("plain", "custom", "learner")
TARGETS = {"custom": harness.at_most(1.03), "learner": harness.at_most(1.03)}


def run(settings: harness.Settings, log) -> list[harness.Row]:
    """Run every contender `settings.runs` times, alternating; rows for the epoch time."""
    iterations = settings.iterations or (100 if settings.quick else 300)
    contenders = {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv(
                    "many_tensors", name, "--iterations", iterations, "--threads", settings.threads
                ),
                settings.threads,
            )
        )
        for name in CONTENDERS
    }
    log(f"many_tensors: {iterations} iterations x {settings.runs} runs, {4 * BLOCKS} tensors")
    results = harness.alternate(contenders, settings.runs, log)
    label = f"many tensors ({iterations} it)"
    rows = harness.rows_for(label, results, "seconds", "epoch time", "s", "plain", TARGETS)
    cpu = harness.rows_for(label, results, "cpu_seconds", "epoch CPU time", "s", "plain", TARGETS)
    for row in cpu:
        row.note = "process CPU time: less sensitive to other load on the machine"
    return rows + cpu


# -- the contenders (run in a child process) ------------------------------------------------


def _model():
    """The 120-block MLP as a `bn.Module` with `train_step`/`valid_step` for the Learner."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    import burnish as bn
    from burnish.train import RegressionOutput, TrainOutput

    class Blocks(bn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers = []
            for _ in range(BLOCKS):
                layers += [nn.Linear(WIDTH, WIDTH), nn.LayerNorm(WIDTH), nn.ReLU()]
            self.blocks = nn.Sequential(*layers)

        def forward(self, inputs: torch.Tensor) -> torch.Tensor:
            return self.blocks(inputs)

        def regression(self, batch) -> RegressionOutput:
            inputs, targets = batch
            output = self(inputs)
            return RegressionOutput(F.mse_loss(output, targets), output, targets)

        def train_step(self, batch) -> TrainOutput:
            item = self.regression(batch)
            return TrainOutput(self, bn.backward(item.loss), item)

        def valid_step(self, batch) -> RegressionOutput:
            return self.regression(batch)

    bn.seed(SEED)
    return Blocks()


class Batches:
    """Pre-built `(inputs, targets)` batches, iterated like a data loader."""

    def __init__(self, batches: list) -> None:
        self.batches = batches
        self.batch_size = BATCH

    def __iter__(self):
        return iter(self.batches)

    def __len__(self) -> int:
        return len(self.batches)

    def num_items(self) -> int:
        return len(self.batches) * BATCH


def _data(iterations: int) -> tuple[Batches, Batches]:
    import torch

    generator = torch.Generator().manual_seed(SEED)

    def batch():
        inputs = torch.randn(BATCH, WIDTH, generator=generator)
        return inputs, torch.randn(BATCH, WIDTH, generator=generator)

    return Batches([batch() for _ in range(iterations)]), Batches([batch()])


def _now() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float]) -> dict[str, float]:
    """Wall and process CPU seconds since `start` (from `_now`)."""
    wall, cpu = _now()
    return {"seconds": wall - start[0], "cpu_seconds": cpu - start[1]}


def plain(iterations: int, workdir: Path) -> dict[str, float]:
    """The hand-written loop; returns the wall and CPU seconds of its epoch."""
    import torch
    import torch.nn.functional as F

    train, valid = _data(iterations)
    model = _model()
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, eps=1e-5, foreach=True)
    start = _now()
    model.train()
    loss_sum = torch.zeros(())
    for inputs, targets in train:
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_sum += loss.detach()
    model.eval()
    with torch.no_grad():
        valid_loss = sum(F.mse_loss(model(x), y) for x, y in valid)
    times = _since(start)
    print(f"train loss {loss_sum.item() / len(train):.5f} | valid loss {float(valid_loss):.5f}")
    return times


def custom(iterations: int, workdir: Path) -> dict[str, float]:
    """The burnish custom loop, same work as `plain`."""
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.optim import AdamConfig, GradientsParams

    train, valid = _data(iterations)
    model = _model()
    optim = AdamConfig().init()
    start = _now()
    model.train()
    loss_sum = torch.zeros(())
    for inputs, targets in train:
        loss = F.mse_loss(model(inputs), targets)
        grads = GradientsParams.from_grads(bn.backward(loss), model)
        model = optim.step(LR, model, grads)
        loss_sum += loss.detach()
    model_valid = bn.valid(model)
    with torch.no_grad():
        valid_loss = sum(F.mse_loss(model_valid(x), y) for x, y in valid)
    times = _since(start)
    print(f"train loss {loss_sum.item() / len(train):.5f} | valid loss {float(valid_loss):.5f}")
    return times


def learner(iterations: int, workdir: Path) -> dict[str, float]:
    """The burnish Learner with loss metrics, file loggers and the CLI renderer."""
    from burnish.optim import AdamConfig
    from burnish.train import LearnerBuilder
    from burnish.train.metric import LossMetric
    from burnish.train.renderer import CliMetricsRenderer

    train, valid = _data(iterations)
    learner = (
        LearnerBuilder(workdir / "artifacts")
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(CliMetricsRenderer())
        .num_epochs(1)
        .build(_model(), AdamConfig().init(), LR)
    )
    start = _now()
    learner.fit(train, valid)
    return _since(start)


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.many_tensors child")
    parser.add_argument("contender", choices=CONTENDERS)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--blocks", type=int, default=BLOCKS, help="1: a host-bound step")
    parser.add_argument("--width", type=int, default=WIDTH)
    parser.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args(argv)
    globals().update(BLOCKS=args.blocks, WIDTH=args.width, BATCH=args.batch)
    harness.set_threads(args.threads)
    workdir = Path(tempfile.mkdtemp(prefix="burnish-bench-"))
    try:
        times = globals()[args.contender](args.iterations, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    harness.report({**times, "iterations": args.iterations})


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks -b many_tensors   (or: ... child CONTENDER)")

"""Background checkpoint writes: how long the training loop stalls per checkpoint.

A ~50M-parameter MLP (2048 -> 4096 -> 4096 -> 4096 -> 2048, Adam: ~600 MB of state per
checkpoint, `DefaultRecorder`) trains on CPU for one epoch with `checkpoint_every(K)`.
Contenders, each in its own process:

  sync    the write as it was before background writes: `to_records()` serialized, fsynced
          and committed on the loop's thread, then the deletions (the benchmark patches the
          writer to run inline and the snapshot away).
  async   burnish as it is: the loop copies the state to the host and an `AsyncCheckpointer`
          thread writes it.

Measured per run: the stall, the median time the loop spends inside
`LearningCheckpointer.save_iteration` over the epoch's mid-epoch checkpoints, and the whole
`fit` (the background writes compete with training for the machine's cores and disk; `fit`
also waits for the last write). Target: the async stall <= 25% of the sync one. Not in the
default selection (~2-3 minutes on 2 cores): `python -m benchmarks -b async_checkpoint`.

    .venv/bin/python -m benchmarks.async_checkpoint child async --threads 1
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

WIDTHS = (2048, 4096, 4096, 4096, 2048)
BATCH, EVERY, CHECKPOINTS, SEED = 8, 6, 3, 7
CONTENDERS = ("sync", "async")
TARGETS = {"async": harness.at_most(0.25)}


def children(threads: int) -> dict:
    """Per contender, a function that runs it once in a fresh child process."""
    return {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv("async_checkpoint", name, "--threads", threads), threads
            )
        )
        for name in CONTENDERS
    }


def run(settings: harness.Settings, log) -> list[harness.Row]:
    """Both contenders `settings.runs` times, alternating: stall per checkpoint and fit time."""
    log(
        f"async_checkpoint: ~50M parameters, checkpoint_every({EVERY}), {CHECKPOINTS} "
        f"checkpoints x {settings.runs} runs"
    )
    results = harness.alternate(children(settings.threads), settings.runs, log)
    label = "async_checkpoint (50M)"
    rows = harness.rows_for(label, results, "stall", "stall/ckpt", "s", "sync", TARGETS)
    rows += harness.rows_for(label, results, "fit", "fit time", "s", "sync")
    rows += harness.rows_for(label, results, "max_rss_mib", "peak RSS", "MiB", "sync")
    for row in rows:
        if row.measure == "stall/ckpt":
            row.note = f"median of {CHECKPOINTS} mid-epoch checkpoints per run"
    return rows


# -- the contenders (run in a child process) ------------------------------------------------


def _model():
    import torch
    from torch import nn

    import burnish as bn
    from burnish.train import TrainOutput

    class WideMlp(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            pairs = itertools.pairwise(WIDTHS)
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairs)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for i, layer in enumerate(self.layers):
                x = layer(x) if i == len(self.layers) - 1 else torch.relu(layer(x))
            return x

        def loss(self, batch) -> torch.Tensor:
            inputs, targets = batch
            return nn.functional.mse_loss(self(inputs), targets)

        def train_step(self, batch) -> TrainOutput:
            loss = self.loss(batch)
            return TrainOutput(self, bn.backward(loss), loss)

        def valid_step(self, batch) -> torch.Tensor:
            return self.loss(batch)

    bn.seed(SEED)
    return WideMlp()


def _batches(count: int) -> list:
    import torch

    generator = torch.Generator().manual_seed(SEED)
    x = torch.randn(count, BATCH, WIDTHS[0], generator=generator)
    y = torch.randn(count, BATCH, WIDTHS[-1], generator=generator)
    return list(zip(x, y))


def synchronous() -> None:
    """Checkpoints written as before background writes: no snapshot, on the loop's thread."""
    from burnish.train.checkpoint.async_writer import AsyncCheckpointer
    from burnish.train.checkpoint.learning import LearningCheckpointer

    def inline(self, label, write):
        self.wait()
        write()

    AsyncCheckpointer.submit = inline  # type: ignore[method-assign]
    LearningCheckpointer._snapshot = staticmethod(lambda state, records: records)  # type: ignore[method-assign]


def timed_saves() -> list[float]:
    """Time every `save_iteration` call (the loop's stall), in seconds."""
    from burnish.train.checkpoint.learning import LearningCheckpointer

    stalls: list[float] = []
    save_iteration = LearningCheckpointer.save_iteration

    def timed(self, state):
        start = time.perf_counter()
        save_iteration(self, state)
        stalls.append(time.perf_counter() - start)

    LearningCheckpointer.save_iteration = timed  # type: ignore[method-assign]
    return stalls


def measure(contender: str, workdir: Path) -> dict[str, float]:
    from burnish.optim import AdamConfig
    from burnish.record import DefaultRecorder
    from burnish.train import LearnerBuilder
    from burnish.train.renderer import NullRenderer

    if contender == "sync":
        synchronous()
    stalls = timed_saves()
    iterations = CHECKPOINTS * EVERY + EVERY // 2  # the epoch ends between two checkpoints
    train, valid = _batches(iterations), _batches(1)
    learner = (
        LearnerBuilder(workdir)
        .with_file_checkpointer(DefaultRecorder())
        .checkpoint_every(EVERY)
        .num_epochs(1)
        .renderer(NullRenderer())
        .build(_model(), AdamConfig().init(), 1e-4)
    )
    start = time.perf_counter()
    learner.fit(train, valid)
    seconds = time.perf_counter() - start
    assert len(stalls) == CHECKPOINTS, stalls
    return {"stall": statistics.median(stalls), "fit": seconds, "stalls": stalls}


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.async_checkpoint child")
    parser.add_argument("contender", choices=CONTENDERS)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    harness.set_threads(args.threads)
    with tempfile.TemporaryDirectory(prefix="burnish-async-ckpt-") as tmp:
        harness.report(measure(args.contender, Path(tmp)))


if __name__ == "__main__":
    child(sys.argv[2:])

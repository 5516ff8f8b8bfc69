"""Gradient all-reduce overlapped with the backward pass: 2 Gloo processes on the CPU.

A model whose gradients are large against its compute (16 `Linear(1024, 1024)` layers with
ReLU, 64 MiB of gradients, batch 8, mean squared output), so that communication dominates.
Each contender runs under `torchrun --standalone --nproc_per_node=2`, one thread per rank;
rank 0 reports the median time of a training step (after warm-up steps):

  ddp            torch's `DistributedDataParallel` (25 MB buckets, overlapped), plain loop:
                 `zero_grad`, `loss.backward()`, `torch.optim.SGD(foreach=True).step()`.
  post_backward  burnish: `bn.backward` -> `GradientsParams.from_grads`, then every bucket
                 all-reduced after the backward pass (`_all_reduce_mean`), then `optim.step`.
  overlap        burnish as the Learner steps: `GradientSync.prepare` before the step, buckets
                 launched from the backward pass, `average` before `optim.step`.
  learner        the burnish `Learner` itself (one epoch, a train `LossMetric`, no files but
                 the experiment log): the epoch's seconds per iteration.

    .venv/bin/python -m benchmarks -b distributed_overlap
    .venv/bin/python -m torch.distributed.run --standalone --nproc_per_node=2 \\
        -m benchmarks.distributed_overlap child overlap --iterations 30
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks import harness

if TYPE_CHECKING:
    import torch

LAYERS, WIDTH, BATCH, LR, SEED, WARMUP = 16, 1024, 8, 1e-3, 42, 3
CONTENDERS = ("ddp", "post_backward", "overlap", "learner")
TARGETS = {"overlap": harness.at_most(1.05), "learner": harness.at_most(1.05)}


def run(settings: harness.Settings, log) -> list[harness.Row]:
    """Run every contender `settings.runs` times, alternating; rows for the step time."""
    iterations = settings.iterations or (10 if settings.quick else 30)
    contenders = {
        name: (
            lambda name=name: harness.run_child(
                [
                    "-m",
                    "torch.distributed.run",
                    "--standalone",
                    "--nproc_per_node=2",
                    *harness.module_argv("distributed_overlap", name, "--iterations", iterations),
                ],
                settings.threads,
            )
        )
        for name in CONTENDERS
    }
    log(f"distributed_overlap: 2 Gloo ranks, {iterations} steps x {settings.runs} runs")
    results = harness.alternate(contenders, settings.runs, log)
    label = f"distributed overlap ({iterations} it)"
    return harness.rows_for(label, results, "step_ms", "step time", "ms", "ddp", TARGETS)


# -- the contenders (run on each rank) ---------------------------------------------------


def _model():
    from torch import nn

    import burnish as bn
    from burnish.train import RegressionOutput, TrainOutput

    class Deep(bn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers: list[nn.Module] = []
            for _ in range(LAYERS):
                layers += [nn.Linear(WIDTH, WIDTH), nn.ReLU()]
            self.layers = nn.Sequential(*layers)

        def forward(self, inputs):
            return self.layers(inputs)

        def regression(self, inputs) -> RegressionOutput:
            output = self(inputs)
            return RegressionOutput(output.square().mean(), output, output.detach())

        def train_step(self, inputs) -> TrainOutput:
            item = self.regression(inputs)
            return TrainOutput(self, bn.backward(item.loss), item)

        def valid_step(self, inputs) -> RegressionOutput:
            return self.regression(inputs)

    bn.seed(SEED)
    return Deep()


def _batches(count: int) -> list:
    import torch
    import torch.distributed as dist

    generator = torch.Generator().manual_seed(SEED + dist.get_rank())
    return [torch.randn(BATCH, WIDTH, generator=generator) for _ in range(count)]


def _timed(step, batches: list) -> float:
    """The median milliseconds of `step(batch)` after `WARMUP` steps (ranks in lockstep)."""
    import torch.distributed as dist

    times = []
    for index, batch in enumerate(batches):
        dist.barrier()
        start = time.perf_counter()
        step(batch)
        if index >= WARMUP:
            times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def ddp(iterations: int) -> float:
    import torch
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, foreach=True)

    def step(inputs) -> None:
        optimizer.zero_grad(set_to_none=True)
        model(inputs).square().mean().backward()
        optimizer.step()

    return _timed(step, _batches(WARMUP + iterations))


def post_backward(iterations: int) -> float:
    import torch.distributed as dist

    import burnish as bn
    from burnish.optim import GradientsParams, SgdConfig

    model, optim = _model(), SgdConfig().init()

    def step(inputs) -> None:
        grads = GradientsParams.from_grads(bn.backward(model(inputs).square().mean()), model)
        _all_reduce_mean([grad for _, grad in grads.items()], dist.get_world_size())
        optim.step(LR, model, grads)

    return _timed(step, _batches(WARMUP + iterations))


def overlap(iterations: int) -> float:
    import torch.distributed as dist

    import burnish as bn
    from burnish.optim import GradientsParams, SgdConfig
    from burnish.train.parallel.grad_sync import GradientSync

    model, optim = _model(), SgdConfig().init()
    sync = GradientSync(dist.get_world_size())

    def step(inputs) -> None:
        sync.prepare(model)
        grads = GradientsParams.from_grads(bn.backward(model(inputs).square().mean()), model)
        optim.step(LR, model, sync.average(grads))

    return _timed(step, _batches(WARMUP + iterations))


def learner(iterations: int) -> float:
    """The Learner's epoch of `WARMUP + iterations` steps after a warm-up epoch, per step."""
    import torch.distributed as dist

    from burnish.optim import SgdConfig
    from burnish.train import LearnerBuilder
    from burnish.train.metric import LossMetric
    from burnish.train.renderer import CliMetricsRenderer

    class Batches(list):
        batch_size = BATCH

    model = _model()
    train, valid = Batches(_batches(iterations)), Batches(_batches(1))
    seconds = []
    with tempfile.TemporaryDirectory() as workdir:
        for epochs in (1, 1):  # the first epoch warms up
            learner = (
                LearnerBuilder(Path(workdir) / str(len(seconds)))
                .metric_train_numeric(LossMetric())
                .renderer(CliMetricsRenderer(file=sys.stderr))
                .num_epochs(epochs)
                .build(model, SgdConfig().init(), LR)
            )
            dist.barrier()
            start = time.perf_counter()
            model = learner.fit(train, valid).model
            seconds.append(time.perf_counter() - start)
    return 1000 * seconds[-1] / iterations


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("contender", choices=CONTENDERS)
    parser.add_argument("--iterations", type=int, default=30)
    args = parser.parse_args(argv)
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    step_ms = globals()[args.contender](args.iterations)
    if dist.get_rank() == 0:
        harness.report({"step_ms": step_ms})
    dist.destroy_process_group()


def _all_reduce_mean(tensors: list[torch.Tensor], world_size: int) -> None:
    """Average `tensors` over the ranks in place: one all-reduce per ~25 MB bucket."""
    import torch
    import torch.distributed as dist

    for bucket in _buckets(tensors):
        flat = torch.cat([t.reshape(-1) for t in bucket])
        dist.all_reduce(flat)
        flat.div_(world_size)
        offset = 0
        for tensor in bucket:
            tensor.copy_(flat[offset : offset + tensor.numel()].view_as(tensor))
            offset += tensor.numel()


def _buckets(tensors: list[torch.Tensor]) -> list[list[torch.Tensor]]:
    """Group tensors of one dtype and device into buckets of about `BUCKET_BYTES`."""
    from burnish.train.parallel.grad_sync import BUCKET_BYTES

    groups: dict[tuple[torch.dtype, torch.device], list[list[torch.Tensor]]] = {}
    for tensor in tensors:
        buckets = groups.setdefault((tensor.dtype, tensor.device), [[]])
        size = sum(t.numel() * t.element_size() for t in buckets[-1])
        if buckets[-1] and size + tensor.numel() * tensor.element_size() > BUCKET_BYTES:
            buckets.append([])
        buckets[-1].append(tensor)
    return [bucket for buckets in groups.values() for bucket in buckets if bucket]


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        sys.exit("usage: python -m benchmarks.distributed_overlap child CONTENDER [options]")

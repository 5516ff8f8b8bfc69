"""A training script for the torch.distributed tests: the same file runs alone or under
`torchrun --nproc_per_node=N` (nothing in it changes).

    python tests/train/distributed_run.py ARTIFACT_DIR OUT [--epochs N] [--batch-size B]
        [--resume-epoch E] [--custom-loop] [--crash-at I] [--kill-at I]
        [--checkpoint-every K] [--accumulate N] [--unused] [--modify-grads] [--fsdp] [--adam]
        [--bf16] [--csv] [--kill-rank R] [--listeners] [--ema] [--on-non-finite MODE]
        [--nan-at I --nan-rank R]

Rank 0 writes the final parameters to OUT. `--kill-in-writer N` SIGKILLs rank 0 at the
checkpoint writer thread's N-th fsync/replace/write, in the first attempt only. `--crash-at`
makes rank 1 raise at its I-th step;
`--kill-in-valid I` makes rank 0 SIGKILL itself at its I-th validation step (first attempt);
`--term-in-valid I` sends it SIGTERM there (a preemption inside validation).
`--valid-items N` validates on N MNIST test items (default 64; an odd N gives the ranks uneven
shards), `--valid-shuffle` shuffles them with a seed, as Burn's MNIST example does (each
validation then has its own order).
`--kill-at` makes rank `--kill-rank` (default 0) SIGKILL itself at its I-th step (resumed with
`resume()`), in the first attempt only: a group that torchrun restarts
(`--max-restarts`) runs on. Rank 0 first lets its background checkpoint write finish (the
mid-epoch checkpoint before the kill is then committed).
`--unused` trains a model with a parameter no step uses and one only some batches use, in
1 KB gradient buckets; `--modify-grads` changes a gradient in place inside `train_step`.
`--fsdp` shards the model with `strategy("fsdp")`; `--adam` trains with Adam instead of SGD;
`--bf16` trains under `mixed_precision("bf16")`.
`--csv` also logs to `metrics-rank<RANK>.csv` with `log_to(CsvLogger(...))` on every rank,
an iteration point every 3 steps.
`--listeners` adds a listener called on rank 0 only and one with `all_ranks = True`, each
writing what it saw to `listener-{main,all}-rank<RANK>.json` in the artifact directory, and a
`ThroughputMetric` with MFU to the training metrics.
`--preempt-at I --preempt-rank R` makes rank R send itself SIGTERM at its I-th step (first
attempt only): a preemption signal that reaches one rank; `--requeue` adds
`preemption(requeue=True)`, `--exit-code C` `preemption(exit_code=C)`.
`--ema` keeps an average of the weights (`with_ema(0.9)`), written to OUT as `ema.*` entries;
`--on-non-finite` sets that mode; `--nan-at I --nan-rank R` makes rank R's loss NaN at its I-th
step (the other ranks' stay finite).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import burnish as bn  # noqa: E402
import burnish.train.parallel.grad_sync as grad_sync  # noqa: E402
from burnish.optim import AdamConfig, GradientsParams, SgdConfig, WeightDecayConfig  # noqa: E402
from burnish.record import DefaultRecorder  # noqa: E402
from burnish.train import TrainingListener, TrainOutput  # noqa: E402
from burnish.train.parallel.fsdp import full_record  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402

from tests.train.helpers import Mlp, builder, loaders  # noqa: E402


class CrashingMlp(Mlp):
    """Rank 1 raises at its `crash_at`-th step; rank `kill_rank` SIGKILLs itself at its
    `kill_at`-th, unless torchrun restarted the group already; rank `nan_rank`'s loss is NaN at
    its `nan_at`-th."""

    def __init__(
        self, crash_at: int = 0, kill_at: int = 0, kill_rank: int = 0, nan_at: int = 0,
        nan_rank: int = 0,
    ) -> None:  # fmt: skip
        super().__init__()
        self.crash_at, self.kill_at, self.calls = crash_at, kill_at, 0
        self.kill_rank = kill_rank
        if os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
            self.kill_at = 0
        self.nan_at, self.nan_rank = nan_at, nan_rank
        self.preempt_at, self.preempt_rank = 0, 0
        self.kill_in_valid, self.term_in_valid, self.valid_calls = 0, 0, 0

    def valid_step(self, batch):
        self.valid_calls += 1
        if self.valid_calls == self.kill_in_valid and int(os.environ.get("RANK", "0")) == 0:
            for thread in threading.enumerate():  # the checkpoint writer (AsyncCheckpointer)
                if thread.name.startswith("burnish-checkpoint"):
                    thread.join()
            say = f"rank 0 SIGKILLs itself in validation step {self.valid_calls}"
            print(say, file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if self.valid_calls == self.term_in_valid and int(os.environ.get("RANK", "0")) == 0:
            os.kill(os.getpid(), signal.SIGTERM)  # a preemption signal, to rank 0 only
        return super().valid_step(batch)

    def train_step(self, batch):
        self.calls += 1
        rank = int(os.environ.get("RANK", "0"))
        if self.calls == self.crash_at and rank == 1:
            raise RuntimeError("rank 1 failed on purpose")
        if self.calls == self.kill_at and rank == self.kill_rank:
            for thread in threading.enumerate():  # the checkpoint writer (AsyncCheckpointer)
                if thread.name.startswith("burnish-checkpoint"):
                    thread.join()
            print(f"rank {rank} SIGKILLs itself at step {self.calls}", file=sys.stderr, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if self.calls == self.preempt_at and rank == self.preempt_rank:
            os.kill(os.getpid(), signal.SIGTERM)  # to this rank only
        if self.calls == self.nan_at and rank == self.nan_rank:
            item = self.forward_classification(batch)
            item.loss = item.loss * float("nan")
            return TrainOutput(self, bn.backward(item.loss), item)
        return super().train_step(batch)


class SometimesMlp(Mlp):
    """`never` gets no gradient; `zeros` only from batches holding a digit 0 (so in some
    steps one rank has its gradient and the other does not)."""

    def __init__(self) -> None:
        super().__init__()
        self.zeros = torch.nn.Linear(28 * 28, 1)
        self.never = torch.nn.Linear(4, 4)

    def train_step(self, batch):
        item = self.forward_classification(batch)
        loss = item.loss
        chosen = batch.targets == 0
        if chosen.any():
            loss = loss + self.zeros(batch.images[chosen].flatten(1)).sum() / len(batch.targets)
        return TrainOutput(self, bn.backward(loss), item)


class ModifyingMlp(Mlp):
    def train_step(self, batch):
        item = self.forward_classification(batch)
        grads = GradientsParams.from_grads(bn.backward(item.loss), self)
        grads.get("linear1.bias").mul_(0.5)
        return TrainOutput(self, grads, item)


class RankJournal(TrainingListener):
    """Writes the moments it was called at, and the loss and accuracy it got, at fit end."""

    def __init__(self, path: Path, all_ranks: bool) -> None:
        self.path, self.all_ranks = path, all_ranks
        self.seen: dict[str, list] = {"iterations": [], "epochs": [], "checkpoints": []}

    def on_iteration_end(self, event):
        values = event.values
        shown = None if values is None else {k: values[k] for k in ("Accuracy", "Loss")}
        self.seen["iterations"].append([str(event.split), event.epoch, event.iteration, shown])

    def on_epoch_end(self, event):
        self.seen["epochs"].append(["train", event.epoch, list(event.values)])

    def on_validation_end(self, event):
        self.seen["epochs"].append(["valid", event.epoch, list(event.values)])

    def on_checkpoint(self, event):
        self.seen["checkpoints"].append(event.path.name)

    def on_fit_end(self, event):
        rank = os.environ.get("RANK", "0")
        kind = "all" if self.all_ranks else "main"
        (self.path / f"listener-{kind}-rank{rank}.json").write_text(json.dumps(self.seen))


def learner_run(args):
    bn.seed(3)
    model = CrashingMlp(args.crash_at, args.kill_at, args.kill_rank, args.nan_at, args.nan_rank)
    if os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
        model.preempt_at, model.preempt_rank = args.preempt_at, args.preempt_rank
        model.kill_in_valid, model.term_in_valid = args.kill_in_valid, args.term_in_valid
    optim = SgdConfig().init()
    if args.unused:
        grad_sync.BUCKET_BYTES = 1024  # several buckets, launched as gradients arrive
        model = SometimesMlp()
        optim = SgdConfig(weight_decay=WeightDecayConfig(0.1)).init()  # moves any stepped param
    if args.modify_grads:
        model = ModifyingMlp()
    if args.adam:
        optim = AdamConfig().init()
    b = builder(args.artifact_dir, epochs=args.epochs, recorder=DefaultRecorder()).renderer(
        CliMetricsRenderer(file=sys.stderr)
    )
    if args.resume_epoch:
        b = b.checkpoint(args.resume_epoch)
    if args.checkpoint_every:
        b = b.checkpoint_every(args.checkpoint_every).resume()
    if args.accumulate:
        b = b.grads_accumulation(args.accumulate)
    if args.fsdp:
        b = b.strategy("fsdp")
    if args.checkpointing:
        b = b.gradient_checkpointing(blocks=torch.nn.Linear)
    if args.execution_ddp:
        from burnish.train import ExecutionStrategy

        b = b.with_training_strategy(ExecutionStrategy.ddp(["cpu", "cpu"]))
    if args.bf16:
        b = b.mixed_precision("bf16")
    if args.max_iterations:
        b = b.max_iterations(args.max_iterations)
    if args.valid_every:
        b = b.valid_every(args.valid_every)
    if args.csv:
        from burnish.train.logger import CsvLogger

        rank = os.environ.get("RANK", "0")
        b = b.log_to(CsvLogger(Path(args.artifact_dir) / f"metrics-rank{rank}.csv")).log_every(3)
    if args.listeners:
        from burnish.train.metric import ThroughputMetric

        artifacts = Path(args.artifact_dir)
        b = b.with_listener(RankJournal(artifacts, all_ranks=False))
        b = b.with_listener(RankJournal(artifacts, all_ranks=True))
        b = b.metric_train_numeric(ThroughputMetric(flops_per_item=1e6, peak_flops=1e9))
    if args.ema:
        b = b.with_ema(0.9)
    if args.on_non_finite:
        b = b.on_non_finite(args.on_non_finite)
    if args.requeue or args.exit_code is not None:
        b = b.preemption(requeue=args.requeue, exit_code=args.exit_code)
    learner = b.build(model, optim, 0.1)
    train, valid = loaders(
        batch_size=args.batch_size, train_items=256, valid_items=args.valid_items
    )
    if args.valid_shuffle:  # Burn's MNIST example shuffles its test loader too
        from burnish.data.dataloader import DataLoaderBuilder
        from burnish.data.dataset import PartialDataset

        from tests.helpers import MnistBatcher, mnist

        shuffled = DataLoaderBuilder(MnistBatcher()).batch_size(args.batch_size).shuffle(5)
        valid = shuffled.build(PartialDataset(mnist("test"), 0, args.valid_items))
    return learner.fit(train, valid)


def custom_loop(args) -> torch.nn.Module:
    """The Burn book's custom loop on a DistributedDataParallel model."""
    dist.init_process_group("gloo")
    bn.seed(3)
    model = torch.nn.parallel.DistributedDataParallel(Mlp())
    optim = SgdConfig().init()
    train, _ = loaders(batch_size=args.batch_size, train_items=256, valid_items=64)
    train = train.shard(dist.get_rank(), dist.get_world_size())
    for _ in range(args.epochs):
        for batch in train.iter():
            loss = torch.nn.functional.cross_entropy(model(batch.images), batch.targets)
            grads = GradientsParams.from_grads(bn.backward(loss), model)
            model = optim.step(0.1, model, grads)
    module = model.module
    del model  # before the group it holds (docs/distributed.md, "Process group")
    dist.destroy_process_group()  # the script joined the group, so it leaves it
    return module


def count_checkpointed_runs() -> list[int]:
    """Each run of a checkpointed block's forward: in the forward pass and its recomputation
    in the backward pass."""
    import burnish.gradient_checkpointing as checkpointing

    runs: list[int] = []
    original = checkpointing.checkpoint

    def counting(function, *args, **kwargs):
        def counted(*inputs, **options):
            runs.append(1)
            return function(*inputs, **options)

        return original(counted, *args, **kwargs)

    checkpointing.checkpoint = counting
    return runs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--resume-epoch", type=int, default=0)
    parser.add_argument("--custom-loop", action="store_true")
    parser.add_argument("--crash-at", type=int, default=0)
    parser.add_argument("--kill-at", type=int, default=0)
    parser.add_argument("--kill-rank", type=int, default=0)
    parser.add_argument("--kill-in-valid", type=int, default=0)
    parser.add_argument("--term-in-valid", type=int, default=0)
    parser.add_argument("--kill-in-writer", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--accumulate", type=int, default=0)
    parser.add_argument("--unused", action="store_true")
    parser.add_argument("--modify-grads", action="store_true")
    parser.add_argument("--fsdp", action="store_true")
    parser.add_argument("--checkpointing", action="store_true")
    parser.add_argument("--execution-ddp", action="store_true")
    parser.add_argument("--adam", action="store_true")
    parser.add_argument("--bf16", action="store_true")
    parser.add_argument("--csv", action="store_true")
    parser.add_argument("--listeners", action="store_true")
    parser.add_argument("--ema", action="store_true")
    parser.add_argument("--on-non-finite", choices=["continue", "skip", "stop"])
    parser.add_argument("--nan-at", type=int, default=0)
    parser.add_argument("--nan-rank", type=int, default=0)
    parser.add_argument("--max-iterations", type=int, default=0)
    parser.add_argument("--valid-every", type=int, default=0)
    parser.add_argument("--valid-items", type=int, default=64)
    parser.add_argument("--valid-shuffle", action="store_true")
    parser.add_argument("--preempt-at", type=int, default=0)
    parser.add_argument("--preempt-rank", type=int, default=0)
    parser.add_argument("--requeue", action="store_true")
    parser.add_argument("--exit-code", type=int)
    args = parser.parse_args()
    torch.set_num_threads(1)
    first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
    if args.kill_in_writer and first_attempt and os.environ.get("RANK", "0") == "0":
        from tests.train.crash_run import kill_in_writer

        kill_in_writer(args.kill_in_writer, say="rank 0 SIGKILLs itself in its writer")
    block_runs = count_checkpointed_runs()
    linear_calls = []  # Linear forwards that record gradients
    torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, _: (
            linear_calls.append(1)
            if isinstance(module, torch.nn.Linear) and torch.is_grad_enabled()
            else None
        )
    )
    try:
        result = None if args.custom_loop else learner_run(args)
    except bn.train.Preempted as preempted:
        print(f"preempted code={preempted.code} rank={os.environ.get('RANK')}", flush=True)
        raise
    model = custom_loop(args) if result is None else result.model
    state = model.state_dict()
    if result is not None and result.ema is not None:
        state.update({f"ema.{k}": v for k, v in result.ema.state_dict().items()})
    if result is not None:
        print(f"stopped_non_finite={result.stopped_non_finite}", flush=True)
        rank = os.environ.get("RANK")
        print(f"linear_calls={len(linear_calls)} rank={rank}", flush=True)
        print(f"block_runs={len(block_runs)} rank={rank}", flush=True)
    if args.fsdp and dist.is_initialized():
        state = full_record(model)  # every rank takes part; rank 0 gets the whole model
    if int(os.environ.get("RANK", "0")) == 0:
        torch.save(state, args.out)


if __name__ == "__main__":
    main()

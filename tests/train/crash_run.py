"""A training run for the crash tests, run as a subprocess and killed with SIGKILL.

    python tests/train/crash_run.py ARTIFACT_DIR OUT [--workers N] [--kill-at-io N]
        [--hold-writes] [--kill-in-writer N] [--kill-in-valid] [--precision fp16] [--trackers]
        [--listener] [--ema] [--groups]
        [--scripted STRATEGY [--kill-after-epoch K] [--kill-in-epoch-end K]]
        [--max-iterations N] [--valid-every K] [--kill-at-step N]

It resumes from the newest complete checkpoint (`resume()`), trains a small dropout MLP on an
MNIST subset with checkpoints every few iterations, and on success writes the final
parameters and optimizer state to OUT. `--kill-at-io N` makes the process SIGKILL itself at
its N-th file-system commit call (fsync, rename, write) — a kill that lands inside a
checkpoint write for certain. `--kill-in-writer N` does so at the N-th such call made by the
background checkpoint writer's thread (`AsyncCheckpointer`); with `--hold-writes` each
background write waits until the loop has reached its next save (or the end of `fit`), so such
a kill lands while the loop has trained, and logged, past the checkpoint being written.
`--kill-in-valid` kills it during the first validation.
`--precision fp16` trains under mixed precision with loss scaling. `--trackers` also logs to
a CSV file and TensorBoard (`log_to`, `log_every(3)`) in the artifact directory.
`--listener` adds a checkpointed `JournalListener` (tests/train/helpers.py), whose final
record goes to OUT beside the parameters. `--ema` keeps
an average of the weights (`with_ema(0.9, warmup=True, update_every=2)`, validated with the
trained model beside it) and writes it to OUT too.

`--groups` trains with parameter groups: a `ModuleOptimizer` (AdamW, no weight decay on the
biases) and a `ModuleLrScheduler` (the output layer at three times the rate, decaying), with
gradient accumulation stepping the scheduler per optimizer step (so a resume inside a group of
accumulated iterations reuses a rate per group).
`--max-iterations N` and `--valid-every K` add a step budget and validations inside the epochs
(either run); `--kill-at-step N` kills the process after its N-th training iteration (between
two validations, for a chosen N); with `--valid-every`, `--kill-in-valid` lands in the first
validation inside an epoch.
`--checkpoint-every N` changes the MNIST run's mid-epoch checkpoints (default every 3 iterations).
`--train-only` fits without a validation loader (`learner.fit(train)`).

Preemption (tests/train/test_preemption.py): `--mark-at-step N`, `--mark-in-valid`,
`--mark-in-writer` and `--mark-in-setup` print `MARK` on stdout at the N-th training iteration,
in the first validation, in the writer thread's first commit call, or in the run's set-up (its
first line), and wait for a line on stdin: the test signals the process group, then writes
that line. The number of training iterations the process ran is printed as `trained=N`, also
when the run is preempted (`preempted code=C trained=N`, then the exit with code C).

`--scripted composed|metric` trains the tiny regression of `scripted.py` instead, whose
validation metric takes chosen values, with early stopping (stops after epoch 5 of 8) and that
checkpointing strategy (keep-last-2 + best, or best only); `--kill-after-epoch K` kills it once
epoch K's end (checkpoint and deletions) is done, `--kill-in-epoch-end K` at the first deletion
of epoch K's end: after its checkpoint committed, before the deletions it decided.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import torch  # noqa: E402

import burnish as bn  # noqa: E402
from burnish.optim import AdamConfig  # noqa: E402
from burnish.record import DefaultRecorder  # noqa: E402
from burnish.train.renderer import CliMetricsRenderer  # noqa: E402

from tests.train.helpers import HeldWrites, JournalListener, Mlp, builder, loaders  # noqa: E402


def killed_at_call(count: int):
    """A wrapper for functions that SIGKILLs this process at the `count`-th call of any
    function it wrapped (one count shared by all of them)."""
    calls = {"n": 0}

    def wrap(function):
        def wrapped(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == count:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)

        return wrapped

    return wrap


def kill_at_io(count: int) -> None:
    """SIGKILL this process at the `count`-th call of fsync/replace/write."""
    wrap = killed_at_call(count)
    os.fsync = wrap(os.fsync)
    os.replace = wrap(os.replace)
    os.write = wrap(os.write)


def in_writer() -> bool:
    """Whether this is the background checkpoint writer's thread."""
    return threading.current_thread().name.startswith("burnish-checkpoint")


def kill_in_writer(count: int, say: str = "") -> None:
    """SIGKILL this process at the writer thread's `count`-th call of fsync/replace/write,
    after writing `say` (if any) on stderr."""
    calls = {"n": 0}

    def wrap(function):
        def wrapped(*args, **kwargs):
            if in_writer():
                calls["n"] += 1
                if calls["n"] == count:
                    if say:
                        print(say, file=sys.stderr, flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)

        return wrapped

    os.fsync = wrap(os.fsync)
    os.replace = wrap(os.replace)
    os.write = wrap(os.write)


def count_io() -> dict[str, int]:
    calls = {"n": 0, "writer": 0}
    lock = threading.Lock()

    def wrap(function):
        def wrapped(*args, **kwargs):
            with lock:
                calls["n"] += 1
                calls["writer"] += in_writer()
            return function(*args, **kwargs)

        return wrapped

    os.fsync, os.replace, os.write = wrap(os.fsync), wrap(os.replace), wrap(os.write)
    return calls


def kill_at_step(count: int) -> None:
    """SIGKILL this process once it has processed `count` training iterations."""
    from burnish.train.report.processor import MetricsProcessor

    process, seen = MetricsProcessor.process, {"n": 0}

    def killing(self, split, *args):
        result = process(self, split, *args)
        if split == "train":
            seen["n"] += 1
            if seen["n"] == count:
                os.kill(os.getpid(), signal.SIGKILL)
        return result

    MetricsProcessor.process = killing


def kill_in_valid() -> None:
    from burnish.train.report.processor import MetricsProcessor

    process = MetricsProcessor.process

    def killing(self, split, *args):
        if split == "valid":
            os.kill(os.getpid(), signal.SIGKILL)
        return process(self, split, *args)

    MetricsProcessor.process = killing


TRAINED = {"n": 0}


def count_trained() -> None:
    """Count the training iterations this process runs (TRAINED)."""
    from burnish.train.report.processor import MetricsProcessor

    process = MetricsProcessor.process

    def counting(self, split, *args):
        TRAINED["n"] += split == "train"
        return process(self, split, *args)

    MetricsProcessor.process = counting


def pause(marker: str = "MARK") -> None:
    """Say `marker` on stdout and wait for the test's line (sent after its signal)."""
    print(marker, flush=True)
    sys.stdin.readline()


def mark_at(step: int, in_valid: bool) -> None:
    """Pause at the `step`-th training iteration, or at the first validation iteration."""
    from burnish.train.report.processor import MetricsProcessor

    process, seen = MetricsProcessor.process, {"train": 0, "valid": 0}

    def marking(self, split, *args):
        result = process(self, split, *args)
        seen[split] += 1
        first_valid = in_valid and split == "valid" and seen["valid"] == 1
        if (split == "train" and seen["train"] == step) or first_valid:
            pause()
        return result

    MetricsProcessor.process = marking


def mark_in_writer() -> None:
    """Pause the writer thread at its first commit call (fsync/replace/write)."""
    done = {"marked": False}

    def wrap(function):
        def wrapped(*args, **kwargs):
            if in_writer() and not done["marked"]:
                done["marked"] = True
                pause()
            return function(*args, **kwargs)

        return wrapped

    os.fsync, os.replace = wrap(os.fsync), wrap(os.replace)


def mark_in_setup() -> None:
    """Pause in the run's set-up: when it announces its artifact directory."""
    from burnish.train.report.announce import Announcer

    run_start = Announcer.run_start

    def marking(self, options):
        run_start(self, options)
        pause()

    Announcer.run_start = marking


class SlowMlp(Mlp):
    """The test model, optionally sleeping in each step: a wider window for timed signals."""

    def __init__(self, step_delay: float) -> None:
        super().__init__(dropout=0.2)
        self.step_delay = step_delay

    def train_step(self, batch):
        time.sleep(self.step_delay)
        return super().train_step(batch)


def kill_at_epoch_end(after: int, in_end: int) -> None:
    """SIGKILL after epoch `after`'s end, or at the first deletion of epoch `in_end`'s end.

    Both happen on the background writer's thread, which writes an epoch's checkpoint and then
    makes the deletions it decided (`LearningCheckpointer._write_epoch`).
    """
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.learning import LearningCheckpointer

    write_epoch, delete = LearningCheckpointer._write_epoch, FileCheckpointer.delete
    ending = {"epoch": 0}

    def writing(self, epoch, *args, **kwargs):
        ending["epoch"] = epoch
        write_epoch(self, epoch, *args, **kwargs)
        ending["epoch"] = 0
        if epoch == after:
            os.kill(os.getpid(), signal.SIGKILL)

    def deleting(self, checkpoint):
        if ending["epoch"] == in_end:
            os.kill(os.getpid(), signal.SIGKILL)
        delete(self, checkpoint)

    LearningCheckpointer._write_epoch, FileCheckpointer.delete = writing, deleting


def scripted_learner(args):
    """The scripted-loss run: early stopping and a metric-based checkpointing strategy."""
    from tests.train import scripted

    class SlowRegression(scripted.Regression):
        def train_step(self, batch):
            time.sleep(args.step_delay)
            return super().train_step(batch)

    bn.seed(4)
    model, optim = SlowRegression(), AdamConfig().init()
    configured = (
        scripted.builder(args.artifact_dir, strategy_name=args.scripted)
        .renderer(CliMetricsRenderer(file=sys.stderr))
        .checkpoint_every(2)
        .deterministic()
        .resume()
    )
    configured = long_run(configured, args)
    return configured.build(model, optim, 1e-2), optim, scripted.loaders()


def long_run(configured, args):
    """The step budget and validations inside epochs the flags ask for."""
    if args.max_iterations:
        configured = configured.max_iterations(args.max_iterations)
    if args.valid_every:
        configured = configured.valid_every(args.valid_every)
    return configured


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--kill-at-io", type=int, default=0)
    parser.add_argument("--kill-in-writer", type=int, default=0)
    parser.add_argument("--hold-writes", action="store_true", help="writes wait for the loop")
    parser.add_argument("--kill-in-valid", action="store_true")
    parser.add_argument("--count-io", action="store_true", help="print the commit calls made")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--step-delay", type=float, default=0.0, help="seconds per step")
    parser.add_argument("--precision", choices=["bf16", "fp16"], help="mixed precision")
    parser.add_argument("--trackers", action="store_true", help="CSV and TensorBoard loggers")
    parser.add_argument("--listener", action="store_true", help="a checkpointed listener")
    parser.add_argument("--ema", action="store_true", help="an average of the weights")
    parser.add_argument("--burnpack", action="store_true", help="with_default_checkpointers()")
    parser.add_argument("--groups", action="store_true", help="parameter groups")
    parser.add_argument("--scripted", choices=["composed", "metric"], help="scripted-loss run")
    parser.add_argument("--kill-after-epoch", type=int, default=0)
    parser.add_argument("--kill-in-epoch-end", type=int, default=0)
    parser.add_argument("--max-iterations", type=int, default=0)
    parser.add_argument("--valid-every", type=int, default=0)
    parser.add_argument("--kill-at-step", type=int, default=0)
    parser.add_argument("--checkpoint-every", type=int, default=3, help="MNIST run")
    parser.add_argument("--train-only", action="store_true", help="no validation loader")
    parser.add_argument("--mark-at-step", type=int, default=0)
    parser.add_argument("--mark-in-valid", action="store_true")
    parser.add_argument("--mark-in-writer", action="store_true")
    parser.add_argument("--mark-in-setup", action="store_true")
    args = parser.parse_args()
    count_trained()
    if args.mark_at_step or args.mark_in_valid:
        mark_at(args.mark_at_step, args.mark_in_valid)
    if args.mark_in_writer:
        mark_in_writer()
    if args.mark_in_setup:
        mark_in_setup()
    calls = count_io() if args.count_io else None
    if args.kill_at_io:
        kill_at_io(args.kill_at_io)
    if args.kill_in_writer:
        kill_in_writer(args.kill_in_writer)
    if args.hold_writes:
        HeldWrites()
    if args.kill_in_valid:
        kill_in_valid()
    if args.kill_at_step:
        kill_at_step(args.kill_at_step)
    if args.kill_after_epoch or args.kill_in_epoch_end:
        kill_at_epoch_end(args.kill_after_epoch, args.kill_in_epoch_end)
    torch.set_num_threads(1)
    args.journal = JournalListener() if args.listener else None
    if args.scripted:
        learner, optim, (train, valid) = scripted_learner(args)
    else:
        learner, optim, (train, valid) = mnist_learner(args)
    try:
        result = learner.fit(train, None if args.train_only else valid)
    except bn.train.Preempted as preempted:
        print(f"preempted code={preempted.code} trained={TRAINED['n']}", flush=True)
        raise
    print(
        f"trained={TRAINED['n']} "
        f"interrupted={result.interrupted} epochs={result.epochs_completed} "
        f"stopped_early={result.stopped_early} iterations={result.iterations} "
        f"validations={result.validations}",
        flush=True,
    )
    if result.interrupted:
        return
    state = {f"model.{k}": v for k, v in result.model.state_dict().items()}
    if result.ema is not None:
        state.update({f"ema.{k}": v for k, v in result.ema.state_dict().items()})
    saved = {"model": state, "optim": optim.to_record()}
    if args.journal is not None:
        saved["listener"] = args.journal.to_record()
    torch.save(saved, args.out)
    if calls is not None:
        print(f"background-writes {calls['writer']}")
        print(f"io-calls {calls['n']}")  # last: the tests read the number after it


def mnist_learner(args):
    """The MNIST run: a dropout MLP, checkpoints every 3 iterations."""
    bn.seed(11)
    model = SlowMlp(args.step_delay)
    optim = AdamConfig().init()
    configured = (
        builder(args.artifact_dir, epochs=args.epochs, recorder=DefaultRecorder())
        .renderer(CliMetricsRenderer(file=sys.stderr))
        .checkpoint_every(args.checkpoint_every)
        .deterministic()
        .resume()
    )
    if args.precision:
        configured = configured.mixed_precision(args.precision)
    if args.burnpack:
        configured = configured.with_default_checkpointers()
    if args.ema:
        configured = configured.with_ema(0.9, warmup=True, update_every=2, validate="both")
    if args.trackers:
        from burnish.train.logger import CsvLogger, TensorBoardLogger

        artifacts = Path(args.artifact_dir)
        every_quarter = CliMetricsRenderer(every_percent=25, file=sys.stderr)
        configured = (
            configured.renderer(every_quarter)
            .log_to(
                CsvLogger(artifacts / "metrics.csv"),
                TensorBoardLogger(artifacts / "tensorboard"),
                config={"lr": 1e-3, "seed": 11},
            )
            .log_every(3)
        )
    if args.journal is not None:
        configured = configured.with_listener(args.journal)
    lr: object = 1e-3
    if args.groups:
        optim, lr = grouped_optim()
        configured = configured.grads_accumulation(2, lr_step="optimizer_step")
    learner = long_run(configured, args).build(model, optim, lr)
    data = loaders(batch_size=32, train_items=960, valid_items=96, workers=args.workers)
    return learner, optim, data


def grouped_optim():
    """AdamW without decay on the biases; the output layer at its own, decaying rate."""
    from burnish.lr_scheduler import LinearLrSchedulerConfig, ModuleLrScheduler
    from burnish.optim import AdamWConfig, ModuleOptimizer, ParamGroup

    optim = ModuleOptimizer(AdamWConfig(weight_decay=0.05)).with_group(
        ParamGroup.from_regex(r"bias$"), AdamWConfig(weight_decay=0.0)
    )
    scheduler = ModuleLrScheduler(1e-3).with_group(
        ParamGroup.from_path("linear2.weight").fuse(ParamGroup.from_path("linear2.bias")),
        LinearLrSchedulerConfig(3e-3, 3e-4, 40),
    )
    return optim, scheduler


if __name__ == "__main__":
    main()

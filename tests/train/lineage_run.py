"""One start of the lineage tests' run, as a subprocess that may SIGKILL itself.

    python tests/train/lineage_run.py ARTIFACT_DIR OUT --epochs E [--lr LR]
        [--start resume|N] [--kill-at-step K] [--kill-in-branch K] [--kill-at-trackers]
        [--trackers NAMES]

Trains the MNIST MLP of test_lineage.py (4 steps per epoch, every epoch checkpoint kept,
a checkpoint every 2 steps) from `--start` (`resume()` or `checkpoint(N)`); on success writes
its parameters to OUT. `--kill-at-step K` SIGKILLs it after its K-th training step,
`--kill-in-branch K` at the K-th file-system commit (atomic write, rename) of a branch's start
(`Lineage`): inside the move of the abandoned part; `--kill-at-trackers` as the trackers
start (a branch's start done, its trackers not told). `--trackers csv,tensorboard,mlflow,wandb`
logs to those trackers every iteration (MLflow: the default store, `<ARTIFACT_DIR>/mlflow.db`;
W&B offline: give it the tests' WANDB_* environment, tests/train/logger/tracker_schedule.py).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))

import torch  # noqa: E402

from tests.train.crash_run import kill_at_step, killed_at_call  # noqa: E402
from tests.train.test_lineage import fit  # noqa: E402


def kill_in_branch(count: int) -> None:
    """SIGKILL this process at the `count`-th commit call of a branch's start."""
    from burnish.train.checkpoint import lineage

    counted = killed_at_call(count)
    lineage.atomic_write_bytes = counted(lineage.atomic_write_bytes)
    lineage.shutil.copytree = counted(lineage.shutil.copytree)  # type: ignore[assignment]
    replace = counted(os.replace)

    class Os:
        def __getattr__(self, name):
            return replace if name == "replace" else getattr(os, name)

    lineage.os = Os()  # type: ignore[assignment]


def kill_at_trackers() -> None:
    """SIGKILL this process when the trackers are about to start."""
    from burnish.train.components.tracking import Tracking

    def killed(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    Tracking.start_run = killed  # type: ignore[method-assign]


def trackers(names: str) -> list:
    """The named trackers, as tests/train/logger's tests make them."""
    from tests.train.logger.tracker_schedule import make_loggers

    return make_loggers(Path(), names.split(",")) if names else []


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("--epochs", type=int, required=True)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--start", default=None)
    parser.add_argument("--kill-at-step", type=int, default=0)
    parser.add_argument("--kill-in-branch", type=int, default=0)
    parser.add_argument("--kill-at-trackers", action="store_true")
    parser.add_argument("--trackers", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.kill_at_step:
        kill_at_step(args.kill_at_step)
    if args.kill_in_branch:
        kill_in_branch(args.kill_in_branch)
    if args.kill_at_trackers:
        kill_at_trackers()
    start = args.start if args.start in (None, "resume") else int(args.start)
    loggers = trackers(args.trackers)
    result = fit(
        Path(args.artifact_dir), args.epochs, args.lr, start, sys.stderr, every=2, trackers=loggers
    )  # the console's lines on stderr
    print(f"epochs={result.epochs_completed} interrupted={result.interrupted}", flush=True)
    torch.save(dict(result.model.state_dict()), args.out)


if __name__ == "__main__":
    main()

"""Train the guide model on MNIST, evaluate it on the test set, then classify a test image
with the saved model.

python -m examples.mnist                 # a short run (1 epoch on 12,000 images)
python -m examples.mnist --full          # the guide's config: 10 epochs, all of MNIST
python -m examples.mnist --resume        # continue an interrupted run from its checkpoint
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# Offline: read MNIST from the copy kept in the repo unless told otherwise.
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))


def main(argv: list[str] | None = None) -> float | None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--artifact-dir", default="artifacts/mnist")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--full", action="store_true", help="the guide's full run")
    parser.add_argument("--epochs", type=int, help="number of epochs (default 1, 10 with --full)")
    parser.add_argument(
        "--limit", type=int, help="items per split (default 12000, all with --full)"
    )
    parser.add_argument("--workers", type=int, help="data loader workers (default 4)")
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --artifact-dir exactly"
    )
    args = parser.parse_args(argv)

    from burnish.data.dataset.vision import MnistDataset

    from examples.mnist.evaluation import evaluate
    from examples.mnist.inference import infer
    from examples.mnist.training import guide_config, train

    config = guide_config()
    epochs = args.epochs or (config.num_epochs if args.full else 1)
    limit = args.limit if args.limit is not None else (None if args.full else 12_000)
    config = config.with_num_epochs(epochs)
    if args.workers is not None:
        config = config.with_num_workers(args.workers)
    from burnish.train import Preempted

    from examples.interrupted import exit_if_interrupted

    try:
        result = train(
            args.artifact_dir, config, args.device, limit=limit or None, resume=args.resume
        )
    except Preempted as preempted:  # SIGTERM: a checkpoint of where training stopped is saved
        print(f"Training {preempted}: not evaluating a half-trained model.", file=sys.stderr)
        raise  # a SystemExit: the process exits with its code (143 for SIGTERM)
    # Ctrl-C: a half-trained model, neither saved nor evaluated; exit 130.
    again = [a for a in (argv if argv is not None else sys.argv[1:]) if a != "--resume"]
    resume = " ".join(["python -m examples.mnist", *again, "--resume"])
    exit_if_interrupted(result, "no model.mpk was saved, nothing evaluated", resume=resume)
    evaluate(args.artifact_dir, args.device, limit=limit or None)
    infer(args.artifact_dir, args.device, MnistDataset.test().get(42))
    if result.summary is None:  # under torchrun, the summary is rank 0's
        return None
    return last_value(result.summary, "valid", "Accuracy")


def last_value(summary, split: str, name: str) -> float:
    """The last epoch's value of a metric in a `LearnerSummary`."""
    for metric in getattr(summary.metrics, split):
        if metric.name == name:
            return metric.entries[-1].value
    raise KeyError(f"no {split} metric {name!r} in the summary")


if __name__ == "__main__":
    main()

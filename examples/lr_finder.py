"""Find a learning rate for the guide model on MNIST with the range test, then (optionally)
train at the suggestion and at the guide's 1e-4 to compare.

python -m examples.lr_finder                      # the sweep: 100 rates from 1e-8 to 1
python -m examples.lr_finder --compare-epochs 1   # then 1 epoch at each rate, all of MNIST
burnish report artifacts/lr-finder                # the sweep's plot, the suggestion marked
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))  # offline: the repo's MNIST
#: Where the sweep is written by default (docs/lr-finder.md's directory too).
ARTIFACT_DIR = "artifacts/lr-finder"


def main(argv: list[str] | None = None) -> dict[str, float]:
    """Run the sweep; returns the suggestion and, with `--compare-epochs`, the validation
    accuracy reached at the suggestion and at the guide's rate."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--artifact-dir", default=ARTIFACT_DIR)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--iterations", type=int, default=100, help="rates tried (default 100)")
    parser.add_argument("--compare-epochs", type=int, default=0, help="epochs of each training")
    parser.add_argument("--limit", type=int, help="items per split of the comparison (all)")
    parser.add_argument("--workers", type=int, default=4, help="data loader workers")
    args = parser.parse_args(argv)

    began = time.perf_counter()
    result = find(args.artifact_dir, args.device, args.iterations, args.workers)
    print(f"{result} in {time.perf_counter() - began:.1f} s")
    suggestion = result.suggestion()
    print(f"Suggested learning rate: {suggestion}; plot: burnish report {args.artifact_dir}")
    found = {"suggestion": suggestion or 0.0}
    if args.compare_epochs and suggestion is not None:
        for name, lr in (("at_suggestion", suggestion), ("at_guide_lr", 1e-4)):
            found[name] = accuracy_after(args, lr, f"{args.artifact_dir}-{name}")
            print(f"Valid accuracy after {args.compare_epochs} epoch(s) at lr {lr:.3g}: "
                  f"{found[name]:.2f}%")  # fmt: skip
    return found


def find(artifact_dir: str, device: str, iterations: int, workers: int):
    """The guide's learner (its model, Adam, batches of 64 shuffled with seed 42) runs the
    range test; `lr_finder.json` lands in `artifact_dir`."""
    import burnish as bn
    from burnish.data.dataloader import DataLoaderBuilder
    from burnish.data.dataset.vision import MnistDataset
    from burnish.train import LearnerBuilder

    from examples.mnist.data import MnistBatcher
    from examples.mnist.training import create_artifact_dir, guide_config

    config = guide_config()
    create_artifact_dir(artifact_dir)
    bn.seed(config.seed)
    loader = (
        DataLoaderBuilder(MnistBatcher())
        .batch_size(config.batch_size)
        .shuffle(config.seed)
        .num_workers(workers)
        .build(MnistDataset.train())
    )
    learner = (
        LearnerBuilder(artifact_dir)
        .devices([device])
        .build(config.model.init(device), config.optimizer.init(), config.learning_rate)
    )
    return learner.lr_find(loader, num_iterations=iterations)


def accuracy_after(args: argparse.Namespace, lr: float, artifact_dir: str) -> float:
    """The guide's training (examples/mnist) at rate `lr`: its last validation accuracy."""
    from examples.mnist.__main__ import last_value
    from examples.mnist.training import guide_config, train

    config = (
        guide_config()
        .with_learning_rate(lr)
        .with_num_epochs(args.compare_epochs)
        .with_num_workers(args.workers)
    )
    result = train(artifact_dir, config, args.device, limit=args.limit)
    assert result.summary is not None
    return last_value(result.summary, "valid", "Accuracy")


if __name__ == "__main__":
    main()

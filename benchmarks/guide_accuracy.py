"""What test accuracy the Burn book's guide recipe reaches: the Learner vs a plain loop, by seed.

    .venv/bin/python -m benchmarks.guide_accuracy                    # seeds 42 1 2 3 4
    .venv/bin/python -m benchmarks.guide_accuracy --seeds 42 --plain # and a plain loop per seed

Each run is `examples/mnist`'s default `TrainingConfig` (10 epochs, batch 64, Adam 1e-4,
the guide model) with only the seed changed, in a fresh process with one thread and no loader
workers (workers change nothing but speed). `--plain` adds the same recipe as a hand-written
PyTorch loop (`torch.optim.Adam(lr=1e-4, eps=1e-5)`, the same batches in the same order, the
same initial weights), to tell the recipe's accuracy from the Learner's. Prints every epoch's
test accuracy and, per contender, the last epoch's mean, min and max over seeds.
This is an accuracy study, not a timing: it takes about 10-20 minutes per run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import harness


def study(seeds: list[int], plain: bool, parallel: int) -> dict[str, dict[int, list[float]]]:
    """Per contender, per seed: the test accuracy (%) after each epoch."""
    names = ("learner", "plain") if plain else ("learner",)
    jobs = [(name, seed) for seed in seeds for name in names]

    def run(job: tuple[str, int]) -> list[float]:
        name, seed = job
        argv = harness.module_argv("guide_accuracy", name, "--seed", seed)
        accuracies = harness.run_child(argv, threads=1, timeout=3 * 3600)["accuracies"]
        print(f"{name} seed {seed}: " + " ".join(f"{a:.2f}" for a in accuracies), flush=True)
        return accuracies

    with ThreadPoolExecutor(parallel) as pool:
        results = list(pool.map(run, jobs))
    table: dict[str, dict[int, list[float]]] = {}
    for (name, seed), accuracies in zip(jobs, results):
        table.setdefault(name, {})[seed] = accuracies
    return table


def summary(table: dict[str, dict[int, list[float]]]) -> str:
    lines = []
    for name, runs in table.items():
        last = [accuracies[-1] for accuracies in runs.values()]
        lines.append(
            f"{name}: last epoch over {len(last)} seed(s): mean {statistics.mean(last):.2f} %, "
            f"min {min(last):.2f} %, max {max(last):.2f} %"
        )
    return "\n".join(lines)


def learner(seed: int) -> list[float]:
    """The guide's `train` with the default config and this seed."""
    from examples.mnist.training import guide_config, train

    config = guide_config().with_seed(seed).with_num_workers(0)
    with tempfile.TemporaryDirectory(prefix="burnish-guide-") as workdir:
        result = train(Path(workdir) / "guide", config, "cpu")
    for metric in result.summary.metrics.valid:
        if metric.name == "Accuracy":
            return [entry.value for entry in metric.entries]
    raise RuntimeError("the guide's summary has no valid Accuracy")


def plain(seed: int) -> list[float]:
    """The guide's recipe by hand: same model, data order, batches and Adam settings."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.data.dataset.vision import MnistDataset

    from examples.mnist.data import MnistBatcher
    from examples.mnist.training import guide_config

    config = guide_config().with_seed(seed)
    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    batcher = MnistBatcher()

    def batch(dataset, index):
        return batcher.batch_stacked(dataset.get_stacked(index), "cpu")

    bn.seed(config.seed)
    model = config.model.init("cpu")
    optimizer = torch.optim.Adam(
        model.parameters(), lr=config.learning_rate, eps=config.optimizer.epsilon
    )
    accuracies = []
    n = len(train_set)
    for epoch in range(config.num_epochs):
        model.train()
        order = np.random.default_rng([config.seed, epoch]).permutation(n)
        for start in range(0, n, config.batch_size):
            items = batch(train_set, order[start : start + config.batch_size])
            loss = F.cross_entropy(model(items.images), items.targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for start in range(0, len(test_set), 1000):
                items = batch(test_set, np.arange(start, min(start + 1000, len(test_set))))
                correct += (model(items.images).argmax(dim=1) == items.targets).sum().item()
        accuracies.append(100.0 * correct / len(test_set))
        print(f"epoch {epoch + 1}: test accuracy {accuracies[-1]:.2f} %", flush=True)
    return accuracies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2, 3, 4])
    parser.add_argument("--plain", action="store_true", help="also run the plain loop per seed")
    parser.add_argument("--parallel", type=int, default=2, help="runs at once (one thread each)")
    args = parser.parse_args(argv)
    print(summary(study(args.seeds, args.plain, args.parallel)))


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.guide_accuracy child")
    parser.add_argument("contender", choices=("learner", "plain"))
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args(argv)
    harness.set_threads(1)
    run = learner if args.contender == "learner" else plain
    harness.report({"accuracies": run(args.seed)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        main()

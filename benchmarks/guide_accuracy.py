"""What test accuracy the Burn book's guide recipe reaches: the Learner vs a plain loop, by seed.

    .venv/bin/python -m benchmarks.guide_accuracy                    # seeds 42 1 2 3 4
    .venv/bin/python -m benchmarks.guide_accuracy --seeds 42 --plain # and a plain loop per seed
    .venv/bin/python -m benchmarks.guide_accuracy --seeds 42 --epochs 20  # a longer schedule
    .venv/bin/python -m benchmarks.guide_accuracy --seeds 7 --plain --epochs 1 --limit 640  # smoke

Each run is `examples/mnist`'s default `TrainingConfig` (10 epochs, batch 64, Adam 1e-4,
the guide model) with only the seed changed (and with `--epochs`, the number of epochs; with
`--limit`, only the first items of each split are used), in a fresh process with one thread
and no loader workers (workers change nothing but speed).
`--plain` adds the same recipe as a hand-written PyTorch loop (`torch.optim.Adam(lr=1e-4,
eps=1e-5)`, the same batches in the same order, the same initial weights), to tell the
recipe's accuracy from the Learner's. Prints every epoch's test accuracy and, per contender,
the last epoch's mean, min and max over seeds. This is an accuracy study, not a timing: a
10-epoch run takes about 8 minutes on an idle core.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks import harness


def study(
    seeds: list[int],
    plain: bool,
    parallel: int,
    epochs: int | None = None,
    limit: int | None = None,
) -> dict[str, dict[int, list[float]]]:
    """Per contender, per seed: the test accuracy (%) after each epoch."""
    names = ("learner", "plain") if plain else ("learner",)
    jobs = [(name, seed) for seed in seeds for name in names]

    def run(job: tuple[str, int]) -> list[float]:
        name, seed = job
        argv = harness.module_argv("guide_accuracy", name, "--seed", seed)
        argv += [f"--{k}={v}" for k, v in (("epochs", epochs), ("limit", limit)) if v]
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


def guide_recipe(seed: int, epochs: int | None = None):
    """The guide's default `TrainingConfig` with this seed (and number of epochs)."""
    from examples.mnist.training import guide_config

    recipe = guide_config().with_seed(seed)
    return recipe.with_num_epochs(epochs) if epochs else recipe


def learner(seed: int, epochs: int | None = None, limit: int | None = None) -> list[float]:
    """The guide's `train` with the default config and this seed."""
    from examples.mnist.training import train

    recipe = guide_recipe(seed, epochs).with_num_workers(0)
    with tempfile.TemporaryDirectory(prefix="burnish-guide-") as workdir:
        result = train(Path(workdir) / "guide", recipe, "cpu", limit=limit)
    for metric in result.summary.metrics.valid:
        if metric.name == "Accuracy":
            return [entry.value for entry in metric.entries]
    raise RuntimeError("the guide's summary has no valid Accuracy")


def plain(seed: int, epochs: int | None = None, limit: int | None = None) -> list[float]:
    """The guide's recipe by hand: same model, data order, batches and Adam settings."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    import burnish as bn
    from burnish.data.dataset.vision import MnistDataset

    from examples.mnist.data import MnistBatcher

    recipe = guide_recipe(seed, epochs)
    train_set, test_set = MnistDataset.train(), MnistDataset.test()
    batcher = MnistBatcher()

    def batch(dataset, index):
        return batcher.batch_stacked(dataset.get_stacked(index), "cpu")

    bn.seed(recipe.seed)
    model = recipe.model.init("cpu")
    optimizer = torch.optim.Adam(
        model.parameters(), lr=recipe.learning_rate, eps=recipe.optimizer.epsilon
    )
    accuracies = []
    n, n_test = (min(limit or len(split), len(split)) for split in (train_set, test_set))
    for epoch in range(recipe.num_epochs):
        model.train()
        order = np.random.default_rng([recipe.seed, epoch]).permutation(n)
        for start in range(0, n, recipe.batch_size):
            items = batch(train_set, order[start : start + recipe.batch_size])
            loss = F.cross_entropy(model(items.images), items.targets)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        correct = 0
        with torch.no_grad():
            for start in range(0, n_test, 1000):
                items = batch(test_set, np.arange(start, min(start + 1000, n_test)))
                correct += (model(items.images).argmax(dim=1) == items.targets).sum().item()
        accuracies.append(100.0 * correct / n_test)
        print(f"epoch {epoch + 1}: test accuracy {accuracies[-1]:.2f} %", flush=True)
    return accuracies


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seeds", type=int, nargs="+", default=[42, 1, 2, 3, 4])
    parser.add_argument("--plain", action="store_true", help="also run the plain loop per seed")
    parser.add_argument("--parallel", type=int, default=2, help="runs at once (one thread each)")
    parser.add_argument("--epochs", type=int, help="epochs per run (default: the guide's 10)")
    parser.add_argument("--limit", type=int, help="items per split (default: all)")
    args = parser.parse_args(argv)
    print(summary(study(args.seeds, args.plain, args.parallel, args.epochs, args.limit)))


def child(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="benchmarks.guide_accuracy child")
    parser.add_argument("contender", choices=("learner", "plain"))
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args(argv)
    harness.set_threads(1)
    run = learner if args.contender == "learner" else plain
    harness.report({"accuracies": run(args.seed, args.epochs, args.limit)})


if __name__ == "__main__":
    if sys.argv[1:2] == ["child"]:
        child(sys.argv[2:])
    else:
        main()

"""Train the guide model on MNIST with TensorBoard and CSV trackers beside Burn's file logs.

python -m examples.tracking                   # 1 epoch on 2,000 images per split
python -m examples.tracking --epochs 3 --limit 0   # all of MNIST

Needs the tensorboard package: pip install tensorboard (or pip install -e '.[tensorboard]').
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Offline: read MNIST from the copy kept in the repo unless told otherwise.
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))


def train(artifact_dir: str | Path, epochs: int, limit: int | None, device: str):
    """Train the guide model, logging to TensorBoard and a CSV table in `artifact_dir`."""
    import burnish as bn
    from burnish.data.dataloader import DataLoaderBuilder
    from burnish.data.dataset.vision import MnistDataset
    from burnish.record import CompactRecorder
    from burnish.train import LearnerBuilder
    from burnish.train.logger import CsvLogger, TensorBoardLogger
    from burnish.train.metric import AccuracyMetric, LossMetric

    from examples.interrupted import exit_if_interrupted
    from examples.mnist.data import MnistBatcher
    from examples.mnist.training import create_artifact_dir, guide_config, limited

    artifact_dir = Path(artifact_dir)
    config = guide_config().with_num_epochs(epochs)
    create_artifact_dir(artifact_dir)
    config.save(artifact_dir / "config.json")
    bn.seed(config.seed)

    def loader(dataset):
        return (
            DataLoaderBuilder(MnistBatcher())
            .batch_size(config.batch_size)
            .shuffle(config.seed)
            .num_workers(config.num_workers)
            .build(limited(dataset, limit))
        )

    learner = (
        LearnerBuilder(artifact_dir)
        .metric_train_numeric(AccuracyMetric())
        .metric_valid_numeric(AccuracyMetric())
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .log_to(
            TensorBoardLogger(artifact_dir / "tensorboard"),
            CsvLogger(artifact_dir / "metrics.csv"),
            config=config,
        )
        .with_file_checkpointer(CompactRecorder())
        .devices([device])
        .num_epochs(config.num_epochs)
        .summary()
        .build(config.model.init(device), config.optimizer.init(), config.learning_rate)
    )
    result = learner.fit(loader(MnistDataset.train()), loader(MnistDataset.test()))
    # Ctrl-C: what was logged so far stays; no half-trained model.mpk; exit 130.
    exit_if_interrupted(result, "no model.mpk was saved", resume=None)
    result.model.save_file(artifact_dir / "model", CompactRecorder())
    return result


def how_to_open(artifact_dir: str | Path) -> str:
    """The commands that show the run's TensorBoard curves and CSV table."""
    artifact_dir = Path(artifact_dir)
    table = artifact_dir / "metrics.csv"
    return (
        "TensorBoard (then open http://localhost:6006):\n"
        f"    tensorboard --logdir {artifact_dir / 'tensorboard'}\n"
        "The CSV table in pandas (one row per metric value; epoch values have no iteration):\n"
        f"    python -c \"import pandas as pd; df = pd.read_csv('{table}'); "
        "print(df[df.iteration.isna()].pivot_table(index=['epoch', 'split'], "
        "columns='metric', values='value'))\"\n"
        "Burn's per-iteration logs:\n"
        f"    {artifact_dir / 'train'}/epoch-N/<Metric>.log, {artifact_dir / 'valid'}/..."
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--artifact-dir", default="artifacts/tracking")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument(
        "--limit", type=int, default=2_000, help="items per split (default 2000; 0: all)"
    )
    args = parser.parse_args(argv)
    train(args.artifact_dir, args.epochs, args.limit or None, args.device)
    print(how_to_open(args.artifact_dir))


if __name__ == "__main__":
    main()

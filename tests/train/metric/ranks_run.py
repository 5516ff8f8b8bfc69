"""Validation metrics over replayed outputs, alone or under `torchrun --nproc_per_node=N`.

    python tests/train/metric/ranks_run.py ARTIFACT_DIR OUT_JSON [--items N] [--batch-size B]

The validation set is `--items` replayed outputs (tests/train/metric/replay.py, half of the
targets padding) in a burnish `DataLoader`, which the learner shards over the ranks. Rank 0
writes the epoch value of every metric, as the renderer and the metric store give it, to
OUT_JSON: `{"renderer": {name: value}, "store": {name: value}}`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from burnish.data.dataloader import Batcher, DataLoaderBuilder  # noqa: E402
from burnish.data.dataset import InMemDataset  # noqa: E402
from burnish.optim import SgdConfig  # noqa: E402
from burnish.train import LearnerBuilder  # noqa: E402
from burnish.train.metric import (  # noqa: E402
    AccuracyMetric,
    AucPrMetric,
    AurocMetric,
    FBetaScoreMetric,
    HammingScore,
    LossMetric,
    Numeric,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)
from burnish.train.metric.store import Aggregate, MetricStore  # noqa: E402
from burnish.train.split import Split  # noqa: E402

from tests.train.metric.replay import PAD, EpochValues, Replay, Replayer, epoch  # noqa: E402


def metrics() -> list[Numeric]:
    """Every pooled metric once (AUROC and AUC-PR: every score of the epoch, all ranks')."""
    return [
        AccuracyMetric(pad_token=PAD),
        TopKAccuracyMetric(2),
        TopKAccuracyMetric(3, pad_token=PAD),
        LossMetric(),
        PerplexityMetric(pad_token=PAD),
        HammingScore(),
        PrecisionMetric.multiclass(1, "macro"),
        RecallMetric.multiclass(2, "weighted"),
        FBetaScoreMetric.multiclass(2.0, 1, "micro"),
        AurocMetric.multiclass("macro"),
        AucPrMetric.multiclass("micro"),
    ]


def items(count: int) -> list[Replay]:
    """`count` one-item outputs of the `padding` scenario (a fixed seed)."""
    batches = epoch("padding", seed=5, items=count)
    whole = Replay(
        *(
            torch.cat([getattr(b, f) for b in batches])
            for f in ("scores", "labels", "truth", "probabilities")
        )
    )
    return [
        Replay(
            whole.scores[i : i + 1],
            whole.labels[i : i + 1],
            whole.truth[i : i + 1],
            whole.probabilities[i : i + 1],
        )
        for i in range(count)
    ]


class ReplayBatcher(Batcher):
    def batch(self, items: list[Replay], device: torch.device) -> Replay:
        fields = ("scores", "labels", "truth", "probabilities")
        return Replay(*(torch.cat([getattr(i, f) for i in items]).to(device) for f in fields))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("--items", type=int, default=37)
    parser.add_argument("--batch-size", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(1)
    renderer = EpochValues()
    builder = LearnerBuilder(args.artifact_dir).renderer(renderer).num_epochs(1)
    registered = metrics()
    for metric in registered:
        builder = builder.metric_valid_numeric(metric)
    learner = builder.build(Replayer("multiclass"), SgdConfig().init(), 0.1)
    loader = DataLoaderBuilder(ReplayBatcher()).batch_size(args.batch_size)
    valid = loader.build(InMemDataset(items(args.items)))
    train = loader.build(InMemDataset(items(4)))
    learner.fit(train, valid)
    if int(os.environ.get("RANK", "0")) == 0:
        store = MetricStore.from_dir(args.artifact_dir)
        names = [m.name for m in registered]
        values = {
            "renderer": {name: renderer.values.get(name) for name in names},
            "store": {
                name: store.find_metric(name, 1, Aggregate.MEAN, Split.VALID) for name in names
            },
        }
        Path(args.out).write_text(json.dumps(values))


if __name__ == "__main__":
    main()

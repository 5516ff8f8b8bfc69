"""Burn main's newer metrics in a real Learner, alone or under `torchrun --nproc_per_node=N`.

    python tests/train/metric/epoch_metrics_run.py ARTIFACT_DIR OUT_JSON
        [--train-items N] [--valid-items N] [--batch-size B] [--checkpoint-every K]
        [--kill-at I]

Every item holds token sequences (CER, WER, BLEU, ROUGE-L), images (PSNR, SSIM), masks (Dice)
and multi-label scores (AUROC, AUC-PR), made from its index alone (`item(i)`), so any split
of the items over ranks sees the same ones. The metrics are registered on both splits; the
model trains nothing. `--checkpoint-every K` writes iteration checkpoints and resumes from the
newest (`resume()`); `--kill-at I` makes rank 0 SIGKILL itself at its I-th training step
(after its background checkpoint write committed). Rank 0 writes each split's epoch values,
as the renderer gets them, to OUT_JSON: `{"train": {name: value}, "valid": {...}}`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

import burnish as bn  # noqa: E402
from burnish.data.dataloader import Batcher, DataLoaderBuilder  # noqa: E402
from burnish.data.dataset import InMemDataset  # noqa: E402
from burnish.optim import SgdConfig  # noqa: E402
from burnish.record import CompactRecorder  # noqa: E402
from burnish.train import LearnerBuilder, TrainOutput  # noqa: E402
from burnish.train.metric import (  # noqa: E402
    AucPrMetric,
    AurocMetric,
    BleuInput,
    BleuScore,
    BleuSmoothing,
    CerInput,
    CharErrorRate,
    ConfusionStatsInput,
    DiceInput,
    DiceMetric,
    Numeric,
    PsnrInput,
    PsnrMetric,
    PsnrMetricConfig,
    RougeLInput,
    RougeLScore,
    SsimInput,
    SsimMetric,
    SsimMetricConfig,
    WerInput,
    WordErrorRate,
)
from burnish.train.renderer import NullRenderer  # noqa: E402

PAD, LENGTH, CLASSES = 0, 7, 3


@dataclasses.dataclass
class Sample:
    """One item (or a batch of them): everything the metrics compare."""

    outputs: torch.Tensor  # [n, LENGTH] predicted tokens
    targets: torch.Tensor  # [n, LENGTH] reference tokens
    images: torch.Tensor  # [n, 1, 8, 8]
    clean: torch.Tensor  # [n, 1, 8, 8]
    masks: torch.Tensor  # [n, CLASSES, 5, 5] predicted one-hot
    truth_masks: torch.Tensor  # [n, CLASSES, 5, 5]
    scores: torch.Tensor  # [n, CLASSES]
    labels: torch.Tensor  # [n, CLASSES] bool

    @property
    def batch_size(self) -> int:
        return self.outputs.shape[0]

    def adapt(self, input_type: type) -> Any:
        if input_type in (CerInput, WerInput, BleuInput, RougeLInput):
            return input_type(self.outputs, self.targets)
        if input_type in (PsnrInput, SsimInput):
            return input_type(self.images, self.clean)
        if input_type is DiceInput:
            return DiceInput(self.masks, self.truth_masks)
        if input_type is ConfusionStatsInput:
            return ConfusionStatsInput(self.scores, self.labels)
        return NotImplemented


def item(index: int) -> Sample:
    """Item `index`: random but fixed, with right padding (some sequences empty)."""
    gen = torch.Generator().manual_seed(1000 + index)
    tokens = torch.randint(1, 5, (2, LENGTH), generator=gen)
    lengths = torch.randint(0, LENGTH + 1, (2, 1), generator=gen)
    tokens[torch.arange(LENGTH) >= lengths] = PAD
    clean = torch.rand(1, 1, 8, 8, generator=gen)
    images = (clean + 0.1 * torch.randn(1, 1, 8, 8, generator=gen)).clamp(0, 1)
    classes = torch.randint(0, CLASSES, (2, 1, 5, 5), generator=gen)
    one_hot = (classes == torch.arange(CLASSES).reshape(1, CLASSES, 1, 1)).long()
    scores = torch.rand(1, CLASSES, generator=gen).round(decimals=1)  # ties
    labels = torch.rand(1, CLASSES, generator=gen) > 0.5
    return Sample(tokens[:1], tokens[1:], images, clean, one_hot[:1], one_hot[1:], scores, labels)


def metrics() -> list[Numeric]:
    """One of each, with padding and smoothing where they have them."""
    return [
        AurocMetric.multilabel("macro"),
        AucPrMetric.multilabel("micro"),
        CharErrorRate(pad_token=PAD),
        WordErrorRate(pad_token=PAD),
        BleuScore(2, pad_token=PAD, smoothing=BleuSmoothing.EXPONENTIAL),
        RougeLScore(pad_token=PAD),
        PsnrMetric(PsnrMetricConfig(1.0)),
        SsimMetric(SsimMetricConfig(1.0).with_kernel_size(3)),
        DiceMetric(),
    ]


class SampleBatcher(Batcher):
    def batch(self, items: list[Sample], device: torch.device) -> Sample:
        fields = [f.name for f in dataclasses.fields(Sample)]
        return Sample(*(torch.cat([getattr(i, f) for i in items]).to(device) for f in fields))


class Replayer(torch.nn.Module):
    """Trains nothing; both steps return the batch as their output. Rank 0 SIGKILLs itself at
    its `kill_at`-th training step."""

    def __init__(self, kill_at: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.kill_at, self.calls = kill_at, 0

    def train_step(self, batch: Sample) -> TrainOutput:
        self.calls += 1
        if self.calls == self.kill_at and os.environ.get("RANK", "0") == "0":
            for thread in threading.enumerate():  # let the checkpoint writer commit
                if thread.name.startswith("burnish-checkpoint"):
                    thread.join()
            os.kill(os.getpid(), signal.SIGKILL)
        return TrainOutput(self, bn.backward((self.weight * 0.0).sum()), batch)

    def valid_step(self, batch: Sample) -> Sample:
        return batch


class SplitValues(NullRenderer):
    """Keeps the epoch values the learner hands the renderer, per split."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, float]] = {}

    def end_epoch(self, split, epoch: int, values: dict[str, float]) -> None:
        self.values.setdefault(str(split.value), {}).update(values)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("artifact_dir")
    parser.add_argument("out")
    parser.add_argument("--train-items", type=int, default=24)
    parser.add_argument("--valid-items", type=int, default=23)
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--checkpoint-every", type=int, default=0)
    parser.add_argument("--kill-at", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    renderer = SplitValues()
    builder = LearnerBuilder(args.artifact_dir).renderer(renderer).num_epochs(1)
    for train, valid in zip(metrics(), metrics()):
        builder = builder.metric_train_numeric(train).metric_valid_numeric(valid)
    if args.checkpoint_every:
        builder = builder.with_file_checkpointer(CompactRecorder())  # half precision tensors
        builder = builder.checkpoint_every(args.checkpoint_every).resume()
    learner = builder.build(Replayer(args.kill_at), SgdConfig().init(), 0.1)
    loader = DataLoaderBuilder(SampleBatcher()).batch_size(args.batch_size)
    train = loader.build(InMemDataset([item(i) for i in range(args.train_items)]))
    valid = loader.build(InMemDataset([item(1000 + i) for i in range(args.valid_items)]))
    learner.fit(train, valid)
    if int(os.environ.get("RANK", "0")) == 0:
        Path(args.out).write_text(json.dumps(renderer.values))


if __name__ == "__main__":
    main()

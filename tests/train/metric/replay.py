"""Replayed model outputs for the differential suite: edge-case epochs and the metrics to run.

A `Replay` is one batch's worth of everything a classifier might output (logits, class
labels, multi-label truth and probabilities, per-item losses) and adapts itself to the input
of every built-in numeric metric, so a model whose `valid_step` returns it feeds them all.
`task` picks what `ConfusionStatsInput` holds: one score column (binary), logits and one-hot
labels (multiclass), or probabilities and multi-label truth (multilabel).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import torch
import torch.nn.functional as F

import burnish as bn
from burnish.train import TrainOutput
from burnish.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    ConfusionStatsInput,
    FBetaScoreMetric,
    HammingScore,
    HammingScoreInput,
    LossInput,
    LossMetric,
    Numeric,
    PerplexityInput,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyInput,
    TopKAccuracyMetric,
)
from burnish.train.renderer import NullRenderer
from burnish.train.split import Split

NUM_CLASSES = 5
PAD = 3  # a class index: metrics built with `pad_token=PAD` ignore it, the others count it


@dataclasses.dataclass
class Replay:
    """One batch of outputs; `adapt` gives each metric its input."""

    scores: torch.Tensor  # [n, C] logits
    labels: torch.Tensor  # [n] class indices
    truth: torch.Tensor  # [n, C] multi-label truth, bool
    probabilities: torch.Tensor  # [n, C] multi-label scores in [0, 1]
    task: str = "multiclass"

    @property
    def batch_size(self) -> int:
        return self.labels.shape[0]

    def adapt(self, input_type):
        if input_type in (AccuracyInput, TopKAccuracyInput, PerplexityInput):
            return input_type(self.scores, self.labels)
        if input_type is LossInput:
            return LossInput(F.cross_entropy(self.scores, self.labels, reduction="none"))
        if input_type is HammingScoreInput:
            return HammingScoreInput(self.probabilities, self.truth.long())
        if input_type is ConfusionStatsInput:
            if self.task == "binary":
                return ConfusionStatsInput(self.probabilities[:, :1], self.truth[:, :1])
            if self.task == "multiclass":
                return ConfusionStatsInput(self.scores, F.one_hot(self.labels, NUM_CLASSES))
            return ConfusionStatsInput(self.probabilities, self.truth)
        return NotImplemented

    def as_task(self, task: str) -> Replay:
        return dataclasses.replace(self, task=task)


def batch_sizes(gen: torch.Generator, items: int) -> list[int]:
    """Random sizes from 1 to 9 adding up to `items - 1`, then a last batch of 1."""
    sizes, left = [], items - 1
    while left > 0:
        size = min(left, int(torch.randint(1, 10, (), generator=gen)))
        sizes.append(size)
        left -= size
    return [*sizes, 1]


def _random(gen: torch.Generator, n: int) -> Replay:
    scores = torch.randn(n, NUM_CLASSES, generator=gen) * 2
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    truth = torch.rand(n, NUM_CLASSES, generator=gen) > 0.6
    return Replay(scores, labels, truth, torch.rand(n, NUM_CLASSES, generator=gen))


def _all_right(gen: torch.Generator, n: int) -> Replay:
    base = _random(gen, n)
    noise = torch.rand(n, NUM_CLASSES, generator=gen) * 0.1
    scores = 8.0 * F.one_hot(base.labels, NUM_CLASSES) + noise
    return dataclasses.replace(
        base, scores=scores, probabilities=torch.where(base.truth, 0.9, 0.1) + noise
    )


def _all_wrong(gen: torch.Generator, n: int) -> Replay:
    base = _all_right(gen, n)
    wrong = (base.labels + 1) % NUM_CLASSES
    scores = 8.0 * F.one_hot(wrong, NUM_CLASSES) + base.scores.remainder(1.0)
    return dataclasses.replace(base, scores=scores, probabilities=1.0 - base.probabilities)


def _missing_class(gen: torch.Generator, n: int) -> Replay:
    """The last class is never a target and never predicted (left out of macro means)."""
    base = _random(gen, n)
    last = NUM_CLASSES - 1
    base.labels = base.labels % last
    base.scores[:, last] = -100.0
    base.truth[:, last] = False
    base.probabilities[:, last] = 0.0
    return base


def _ties(gen: torch.Generator, n: int) -> Replay:
    """Scores from {0, 1} (rows all equal, too) and probabilities on the threshold 0.5."""
    scores = torch.randint(0, 2, (n, NUM_CLASSES), generator=gen).float()
    scores[::3] = 1.0
    labels = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    probabilities = torch.randint(0, 3, (n, NUM_CLASSES), generator=gen) / 2.0
    truth = torch.rand(n, NUM_CLASSES, generator=gen) > 0.5
    return Replay(scores, labels, truth, probabilities)


def _padding(gen: torch.Generator, n: int) -> Replay:
    """Half the targets are the pad class; a batch of size 1 or 2 is all padding."""
    base = _random(gen, n)
    pad = torch.rand(n, generator=gen) < 0.5
    if n <= 2:
        pad[:] = True
    base.labels = torch.where(pad, PAD, base.labels)
    return base


def _one_class(gen: torch.Generator, n: int) -> Replay:
    """Every target is class 1 (one AUROC class); no multi-label positive at all."""
    base = _random(gen, n)
    base.labels[:] = 1
    base.truth[:] = False
    return base


SCENARIOS: dict[str, Callable[[torch.Generator, int], Replay]] = {
    "random": _random,
    "all-right": _all_right,
    "all-wrong": _all_wrong,
    "missing-class": _missing_class,
    "ties": _ties,
    "padding": _padding,
    "one-class": _one_class,
}


def epoch(scenario: str, seed: int, items: int = 40) -> list[Replay]:
    """An epoch of `scenario`: random batch sizes, the last batch of size 1."""
    gen = torch.Generator().manual_seed(seed)
    return [SCENARIOS[scenario](gen, n) for n in batch_sizes(gen, items)]


@dataclasses.dataclass(frozen=True)
class MetricCase:
    """A metric configuration and the task its `ConfusionStatsInput` comes from."""

    id: str
    build: Callable[[], Numeric]
    task: str = "multiclass"


def _confusion_cases() -> list[MetricCase]:
    cases = []
    for reduction in ("micro", "macro", "weighted"):
        for top_k in (1, 2):
            cases += [
                MetricCase(
                    f"precision-top{top_k}-{reduction}",
                    lambda k=top_k, r=reduction: PrecisionMetric.multiclass(k, r),
                ),
                MetricCase(
                    f"recall-top{top_k}-{reduction}",
                    lambda k=top_k, r=reduction: RecallMetric.multiclass(k, r),
                ),
            ]
        for beta in (0.5, 2.0):
            cases.append(
                MetricCase(
                    f"f{beta}-top1-{reduction}",
                    lambda b=beta, r=reduction: FBetaScoreMetric.multiclass(b, 1, r),
                )
            )
        for threshold in (0.3, 0.5):
            for title, build in (
                ("precision", lambda t, r: PrecisionMetric.multilabel(t, r)),
                ("recall", lambda t, r: RecallMetric.multilabel(t, r)),
                ("f1", lambda t, r: FBetaScoreMetric.multilabel(1.0, t, r)),
            ):
                cases.append(
                    MetricCase(
                        f"{title}-multilabel@{threshold}-{reduction}",
                        lambda b=build, t=threshold, r=reduction: b(t, r),
                        "multilabel",
                    )
                )
    for threshold in (0.3, 0.5, 0.7):
        cases += [
            MetricCase(
                f"precision-binary@{threshold}",
                lambda t=threshold: PrecisionMetric.binary(t),
                "binary",
            ),
            MetricCase(
                f"recall-binary@{threshold}", lambda t=threshold: RecallMetric.binary(t), "binary"
            ),
        ]
    for beta in (0.5, 1.0, 2.0):
        cases.append(
            MetricCase(f"f{beta}-binary", lambda b=beta: FBetaScoreMetric.binary(b), "binary")
        )
    return cases


METRICS: list[MetricCase] = [
    MetricCase("accuracy", AccuracyMetric),
    MetricCase("accuracy-pad", lambda: AccuracyMetric(pad_token=PAD)),
    MetricCase("top1", lambda: TopKAccuracyMetric(1)),
    MetricCase("top2", lambda: TopKAccuracyMetric(2)),
    MetricCase("top3-pad", lambda: TopKAccuracyMetric(3, pad_token=PAD)),
    MetricCase("loss", LossMetric),
    MetricCase("perplexity", PerplexityMetric),
    MetricCase("perplexity-pad", lambda: PerplexityMetric(pad_token=PAD)),
    MetricCase("hamming", HammingScore),
    MetricCase("hamming@0.3", lambda: HammingScore(0.3)),
    MetricCase("hamming-sigmoid", lambda: HammingScore(0.5, sigmoid=True)),
    *_confusion_cases(),
]


def close(actual: float, expected: float, tolerance: float = 1e-6) -> bool:
    """Equal to `tolerance`, relative above 1 (NaN equals NaN)."""
    if math.isnan(expected) or math.isnan(actual):
        return math.isnan(expected) and math.isnan(actual)
    return abs(actual - expected) <= tolerance * max(1.0, abs(expected))


class Replayer(torch.nn.Module):
    """Trains nothing; validation returns the replayed outputs as its own."""

    def __init__(self, task: str) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(1))
        self.task = task

    def train_step(self, batch) -> TrainOutput:
        return TrainOutput(self, bn.backward((self.weight * 0.0).sum()), None)

    def valid_step(self, batch: Replay) -> Replay:
        return batch.as_task(self.task)


class EpochValues(NullRenderer):
    """Keeps the values the learner hands the renderer at each split's end."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def end_epoch(self, split, epoch: int, values: dict[str, float]) -> None:
        if split == Split.VALID:
            self.values.update(values)

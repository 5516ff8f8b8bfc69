"""The documented epoch value of every numeric metric, from scikit-learn and torchmetrics.

Each function takes the epoch's batches (the metric's input dataclasses, on the CPU) and
returns the value docs/metrics.md defines, computed by a reference implementation on the
epoch's items: scikit-learn's precision/recall/F-beta and ROC AUC, torchmetrics' accuracy and
perplexity where they agree with the definition. Only the documented conventions are spelled
out here: argmax's ranking of tied scores, classes that never occur left out of macro means,
undefined columns of AUROC and AUC-PR left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from sklearn import metrics as skm

from burnish.train.metric import (
    AccuracyMetric,
    AucPrMetric,
    AurocMetric,
    ClassReduction,
    FBetaScoreMetric,
    HammingScore,
    LossMetric,
    Numeric,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
    TopKAccuracyMetric,
)


def argmax_ranking(scores: np.ndarray) -> np.ndarray:
    """Each row's classes best first, as `torch.argmax` ranks them: NaN highest, ties by index."""
    order = np.empty(scores.shape, dtype=np.int64)
    for i, row in enumerate(scores):
        keys = [
            (0 if math.isnan(v) else 1, 0.0 if math.isnan(v) else -float(v), j)
            for j, v in enumerate(row)
        ]
        order[i] = [j for *_, j in sorted(keys)]
    return order


def _cat(batches: Sequence[Any], field: str) -> np.ndarray:
    return torch.cat([getattr(b, field) for b in batches]).detach().cpu().double().numpy()


def _threshold(batches: Sequence[Any], field: str, threshold: float) -> float:
    """`threshold` rounded to the dtype of the scores it is compared with (what `score >
    threshold` means for a tensor: a float32 score of 0.3 is not above the threshold 0.3)."""
    dtype = getattr(batches[0], field).dtype
    return float(torch.tensor(threshold, dtype=dtype).double())


def _ties_or_nan(scores: np.ndarray) -> bool:
    return bool(np.isnan(scores).any() or (np.diff(np.sort(scores, axis=1), axis=1) == 0).any())


def accuracy(batches: Sequence[Any], k: int = 1, pad: int | None = None) -> float:
    """Percent of non-pad targets among their row's `k` best classes, over the epoch.

    Without tied or NaN scores, torchmetrics' `multiclass_accuracy` (micro, `top_k`,
    `ignore_index`) gives the same number, which is checked.
    """
    scores, targets = _cat(batches, "outputs"), _cat(batches, "targets").astype(np.int64)
    keep = np.ones(len(targets), bool) if pad is None else targets != pad
    if not keep.any():
        return math.nan
    hits = (argmax_ranking(scores)[:, :k] == targets[:, None]).any(axis=1)
    value = 100.0 * float(hits[keep].mean())
    num_classes = scores.shape[1]
    if not _ties_or_nan(scores) and ((targets >= 0) & (targets < num_classes) | ~keep).all():
        from torchmetrics.functional.classification import multiclass_accuracy

        checked = multiclass_accuracy(
            torch.tensor(scores),
            torch.tensor(np.where(keep, targets, -1)),
            num_classes,
            average="micro",
            top_k=k,
            ignore_index=-1,
        )
        assert abs(float(checked) - value / 100.0) < 1e-6, (float(checked), value)  # float32
    return value


def loss(batches: Sequence[Any]) -> float:
    """The mean loss per item: per-item losses pooled, a 0-dim loss weighted by its items."""
    total = count = 0.0
    for b in batches:
        values = b.loss.detach().double().reshape(-1)
        if values.numel() == 1:
            total += float(values[0]) * b.batch_size
        else:
            total += float(values.sum())
        count += b.batch_size
    return total / count if count else math.nan


def perplexity(batches: Sequence[Any], pad: int | None = None) -> float:
    """exp(mean NLL per non-pad token) of the epoch's tokens (torch's cross-entropy)."""
    outputs = torch.cat([b.outputs for b in batches]).double()
    targets = torch.cat([b.targets for b in batches]).long()
    keep = torch.ones_like(targets, dtype=torch.bool) if pad is None else targets != pad
    if not bool(keep.any()):
        return math.nan
    nll = F.cross_entropy(outputs[keep], targets[keep], reduction="sum")
    return math.exp(float(nll) / int(keep.sum()))


def rank_metric(batches: Sequence[Any], metric: AurocMetric | AucPrMetric) -> float:
    """scikit-learn's ROC AUC or average precision of the epoch's items per column (One-vs-Rest),
    undefined columns left out, 50 % when none is defined (Burn main)."""
    score = skm.roc_auc_score if isinstance(metric, AurocMetric) else skm.average_precision_score
    scores = torch.cat([b.predictions for b in batches]).double().numpy()
    truth = torch.cat([b.targets for b in batches]).bool().numpy()
    if np.isnan(scores).any():
        return math.nan
    reduction = ClassReduction(metric.class_reduction).value
    if reduction == "micro":
        scores, truth = scores.reshape(-1, 1), truth.reshape(-1, 1)
    positives = truth.sum(0)
    defined = positives > 0
    if isinstance(metric, AurocMetric):
        defined &= positives < len(truth)
    if not defined.any():
        return 50.0
    values = np.array([score(truth[:, c], scores[:, c]) for c in np.flatnonzero(defined)])
    weights = positives[defined] if reduction == "weighted" else np.ones(len(values))
    return 100.0 * float((values * weights).sum() / weights.sum())


def hamming(batches: Sequence[Any], threshold: float = 0.5, sigmoid: bool = False) -> float:
    """100 * (1 - scikit-learn's Hamming loss) over the epoch's labels."""
    outputs = torch.cat([b.outputs for b in batches])
    if sigmoid:  # in the outputs' dtype, as the metric (float32 rounds sigmoid(1e-9) to 0.5)
        outputs = outputs.sigmoid()
    outputs = outputs.double()
    targets = _cat(batches, "targets").astype(int)
    predicted = (outputs.numpy() > _threshold(batches, "outputs", threshold)).astype(int)
    return 100.0 * (1.0 - skm.hamming_loss(targets, predicted))


def confusion(
    batches: Sequence[Any],
    score: str,
    reduction: str,
    threshold: float | None = 0.5,
    top_k: int | None = None,
    beta: float = 1.0,
) -> float:
    """Precision / recall / F-beta of the epoch's items, from scikit-learn's per-class values.

    `score`: "precision", "recall" or "fbeta". 0/0 counts as 0 (`zero_division=0`); macro
    averages the classes that occur (predicted or a target); no such class, or no positive for
    weighted: NaN.
    """
    scores, truth = _cat(batches, "predictions"), _cat(batches, "targets").astype(int)
    if top_k is not None:
        predicted = np.zeros_like(truth)
        np.put_along_axis(predicted, argmax_ranking(scores)[:, :top_k], 1, axis=1)
    else:
        with np.errstate(invalid="ignore"):
            predicted = (scores > _threshold(batches, "predictions", threshold)).astype(int)
    if reduction == "micro":  # pool the classes into one
        truth, predicted = truth.reshape(-1, 1), predicted.reshape(-1, 1)
    # A zero column keeps scikit-learn in multilabel mode for a single class.
    pad = np.zeros((len(truth), 1), dtype=int)
    y_true, y_pred = np.hstack([truth, pad]), np.hstack([predicted, pad])
    classes = list(range(truth.shape[1]))
    precision, recall, fbeta, support = skm.precision_recall_fscore_support(
        y_true, y_pred, beta=beta, labels=classes, average=None, zero_division=0
    )
    per_class = {"precision": precision, "recall": recall, "fbeta": fbeta}[score]
    if reduction == "weighted":
        if not support.sum():
            return math.nan
        return 100.0 * float((per_class * support).sum() / support.sum())
    occurs = (truth | predicted).any(axis=0)
    return 100.0 * float(per_class[occurs].mean()) if occurs.any() else math.nan


def of(metric: Numeric, batches: Sequence[Any]) -> float:
    """The documented epoch value of `metric` over `batches`, by the references above."""
    if isinstance(metric, TopKAccuracyMetric):
        return accuracy(batches, metric.k, metric.pad_token)
    if isinstance(metric, AccuracyMetric):
        return accuracy(batches, 1, metric.pad_token)
    if isinstance(metric, LossMetric):
        return loss(batches)
    if isinstance(metric, PerplexityMetric):
        return perplexity(batches, metric.pad_token)
    if isinstance(metric, (AurocMetric, AucPrMetric)):
        return rank_metric(batches, metric)
    if isinstance(metric, HammingScore):
        return hamming(batches, metric.threshold, metric.sigmoid)
    if isinstance(metric, (PrecisionMetric, RecallMetric, FBetaScoreMetric)):
        score = {PrecisionMetric: "precision", RecallMetric: "recall"}.get(type(metric), "fbeta")
        reduction = ClassReduction(metric.class_reduction).value
        beta = getattr(metric, "beta", 1.0)
        return confusion(batches, score, reduction, metric.rule.threshold, metric.rule.top_k, beta)
    raise TypeError(f"no reference for {type(metric).__name__}")

"""Area under the ROC curve over the epoch (Burn main's `AurocMetric`).

Binary, multiclass and multi-label through a One-vs-Rest decomposition (see rank_metric.py):
each column's AUROC is the Mann-Whitney statistic `P(score of a positive > score of a
negative) + ½ P(tie)` over every item of the epoch — scikit-learn's `roc_auc_score` — computed
from midranks in O(n log n) (Burn compares all pairs, O(n²)).
"""

from __future__ import annotations

import math

import torch

from burnish.train.metric.rank_metric import RankMetric, tie_groups

__all__ = ["AurocMetric", "auroc_columns"]


def auroc_columns(scores: torch.Tensor, truth: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each column's AUROC and whether it is defined (both a positive and a negative).

    Args:
        scores: `[n, C]` floating scores.
        truth: `[n, C]` bool.

    Returns:
        `[C]` AUROC in [0, 1] (NaN where undefined or a score is NaN) and `[C]` bool.
    """
    sorted_scores, order = scores.sort(dim=0)
    sorted_truth = truth.gather(0, order).to(scores.dtype)
    first, last = tie_groups(sorted_scores)
    midrank = (first + last).to(scores.dtype) / 2.0 + 1.0
    positives = truth.sum(dim=0).to(scores.dtype)
    negatives = scores.shape[0] - positives
    rank_sum = (midrank * sorted_truth).sum(dim=0)
    auroc = (rank_sum - positives * (positives + 1.0) / 2.0) / (positives * negatives)
    auroc = torch.where(scores.isnan().any(dim=0), math.nan, auroc)
    return auroc, (positives > 0) & (negatives > 0)


class AurocMetric(RankMetric):
    """AUROC in percent over the whole epoch (Burn main: `AurocMetric`).

    `AurocMetric.binary()`, `.multiclass(class_reduction)`, `.multilabel(class_reduction)`;
    `AurocMetric()` is `multiclass("macro")`. Name: `AUROC [Macro]` (`[Micro]`, `[Weighted]`).
    Scores are taken as given (logits or probabilities: AUROC only sees their order per
    column). `ClassificationOutput` feeds it `[n, C]` scores with one-hot targets (a one-column
    output: the 0/1 targets); `MultiLabelClassificationOutput` its scores and labels.

    Example:
        >>> AurocMetric.multiclass("micro").name
        'AUROC [Micro]'
    """

    _title = "AUROC"

    def columns(
        self, scores: torch.Tensor, truth: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each column's AUROC and whether it has both classes."""
        return auroc_columns(scores, truth)

"""Area under the precision-recall curve over the epoch (Burn main's `AucPrMetric`).

Average precision `AP = Σ (Rₖ - Rₖ₋₁) Pₖ` over the distinct score thresholds, descending —
scikit-learn's `average_precision_score`, which Burn's documentation names as its definition —
per One-vs-Rest column (see rank_metric.py). Tied scores form one threshold, so the value does
not depend on the order of equal scores (Burn's argsort-based sum does, on ties).
"""

from __future__ import annotations

import math

import torch

from burnish.train.metric.rank_metric import RankMetric, tie_groups

__all__ = ["AucPrMetric", "average_precision_columns"]


def average_precision_columns(
    scores: torch.Tensor, truth: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Each column's average precision and whether it is defined (a positive).

    Args:
        scores: `[n, C]` floating scores.
        truth: `[n, C]` bool.

    Returns:
        `[C]` AP in [0, 1] (NaN where undefined or a score is NaN) and `[C]` bool.
    """
    sorted_scores, order = scores.sort(dim=0, descending=True)
    sorted_truth = truth.gather(0, order).to(scores.dtype)
    true_positives = sorted_truth.cumsum(dim=0)
    _, last = tie_groups(sorted_scores)
    # Each positive adds 1/P recall at its threshold, whose precision is tp/rank at the last
    # of its tied scores.
    precision = true_positives.gather(0, last) / (last + 1).to(scores.dtype)
    positives = truth.sum(dim=0).to(scores.dtype)
    ap = (sorted_truth * precision).sum(dim=0) / positives
    ap = torch.where(scores.isnan().any(dim=0), math.nan, ap)
    return ap, positives > 0


class AucPrMetric(RankMetric):
    """AUC-PR (average precision) in percent over the whole epoch (Burn main: `AucPrMetric`).

    Constructors and inputs as `AurocMetric`; name `AUC-PR [Macro]` (`[Micro]`, `[Weighted]`).
    A column without a positive has no value and is left out of the mean.

    Example:
        >>> AucPrMetric.binary().name
        'AUC-PR [Macro]'
    """

    _title = "AUC-PR"

    def columns(
        self, scores: torch.Tensor, truth: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Each column's average precision and whether it has a positive."""
        return average_precision_columns(scores, truth)

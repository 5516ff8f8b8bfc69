"""The k best classes of each item, ranked as `torch.argmax` ranks them.

`torch.topk` leaves the order of equal scores unspecified (on the CPU it often returns a later
class first), so top-1 of a top-k metric could disagree with `AccuracyMetric`'s `argmax` on
tied scores. Here every metric ranks one way, `argmax`'s: a higher score first, equal scores
by class index (the first class wins), and NaN above every number (as `argmax`, `sort` and
`topk` put it). Everything stays on the device: no host sync, no value-dependent shape.
"""

from __future__ import annotations

import torch

__all__ = ["top_k_mask", "target_in_top_k"]


def top_k_mask(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Which classes are among the `k` best of each row.

    Args:
        scores: shape `[batch_size, num_classes]`, `k <= num_classes`.
        k: how many classes each row predicts.

    Returns:
        A bool tensor of `scores`' shape with exactly `k` True per row: for `k=1`, the class
        `argmax` picks; ties go to the lower class index.
    """
    if k == 1:
        best = scores.argmax(dim=1, keepdim=True)
    else:  # a stable sort keeps equal scores (NaN included) in class order
        best = scores.sort(dim=1, descending=True, stable=True).indices[:, :k]
    return torch.zeros_like(scores, dtype=torch.bool).scatter_(1, best, True)


def target_in_top_k(scores: torch.Tensor, targets: torch.Tensor, k: int) -> torch.Tensor:
    """Whether each row's target class is among its `k` best, in O(batch x classes).

    The target's rank is the number of classes ranked before it: a higher score, or an equal
    score at a lower index (NaN above every number). No sort.

    Args:
        scores: shape `[batch_size, num_classes]`.
        targets: class indices, shape `[batch_size]`; an index outside `[0, num_classes)`
            is never a hit.
        k: how many of the best classes count.

    Returns:
        A bool tensor of shape `[batch_size]`; for `k=1` it is `scores.argmax(1) == targets`.
    """
    if k == 1:
        return scores.argmax(dim=1) == targets
    num_classes = scores.shape[1]
    column = targets.long().unsqueeze(1)
    safe = column.clamp(0, num_classes - 1)
    pivot = scores.gather(1, safe)
    nan, pivot_nan = scores.isnan(), pivot.isnan()
    above = (scores > pivot) | (nan & ~pivot_nan)
    tied = (scores == pivot) | (nan & pivot_nan)
    earlier = torch.arange(num_classes, device=scores.device) < safe
    rank = (above | (tied & earlier)).sum(dim=1)
    return (rank < k) & (safe == column).squeeze(1)

"""BLEU over the epoch (Burn main's `BleuScore`, Papineni et al. 2002).

Corpus BLEU of the epoch's sequences: the clipped and total n-gram counts of every order, and
the candidate and reference lengths, are summed over the epoch (the state's totals), and the
score is computed once from them — what torchmetrics' `BLEUScore` and sacreBLEU's corpus score
give. Burn computes this per batch and averages the batch scores over the epoch (its source
leaves corpus accumulation as a TODO); the batch entries here are those batch scores.

`BLEU = BP · exp(mean over n of log pₙ)`, `pₙ` = clipped / total n-grams of order n, brevity
penalty `BP = exp(1 - ref/cand)` when the candidates are shorter, else 1. No candidate token, or
an order without n-grams, scores 0; an order without a match scores 0 unless smoothed:
`BleuSmoothing.add_epsilon(eps)` takes `pₙ = eps / total`, `BleuSmoothing.EXPONENTIAL` takes
`pₙ = 1 / (2ᵏ · total)` for the k-th order without a match (Chen & Cherry 2014, methods 1, 3).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.sequence import (
    TokenSequences,
    check_tokens,
    length_before_pad,
    ngram_matches,
)
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype

__all__ = ["BleuInput", "BleuScore", "BleuSmoothing"]


class BleuInput(TokenSequences):
    """Input of `BleuScore`: predicted and reference token indices (`TokenSequences`)."""


@dataclasses.dataclass(frozen=True)
class BleuSmoothing:
    """How an n-gram order without a match counts (Burn: `BleuSmoothing`).

    Use `BleuSmoothing.NONE` (default), `BleuSmoothing.add_epsilon(epsilon=0.1)` or
    `BleuSmoothing.EXPONENTIAL`.
    """

    kind: str = "none"
    epsilon: float = 0.1

    NONE: ClassVar[BleuSmoothing]  # set below the class (Burn: `BleuSmoothing::None`)
    EXPONENTIAL: ClassVar[BleuSmoothing]  # Burn: `BleuSmoothing::Exponential`

    @classmethod
    def add_epsilon(cls, epsilon: float = 0.1) -> BleuSmoothing:
        """`pₙ = epsilon / total` for an order without a match (Chen & Cherry, method 1)."""
        if not epsilon > 0:
            raise ValueError(f"`epsilon` must be > 0. Received: epsilon={epsilon}.")
        return cls("add_epsilon", float(epsilon))

    AddEpsilon = add_epsilon  # Burn's spelling

    def __repr__(self) -> str:
        if self.kind == "add_epsilon":
            return f"BleuSmoothing.add_epsilon({self.epsilon!r})"
        return f"BleuSmoothing.{self.kind.upper()}"


BleuSmoothing.NONE = BleuSmoothing("none")
BleuSmoothing.EXPONENTIAL = BleuSmoothing("exponential")


class BleuScore(StatefulNumeric):
    """Corpus BLEU in percent over the epoch (Burn: `BleuScore`, name `BLEU-{max_n}`).

    Args:
        max_n: the largest n-gram order (4: BLEU-4).
        pad_token: a sequence ends at its first token equal to it.
        smoothing: a `BleuSmoothing`.

    Raises:
        ValueError: if `max_n < 1` or `smoothing` is not a `BleuSmoothing`.

    Example:
        >>> BleuScore.with_max_n(2).name
        'BLEU-2'
    """

    input_type = BleuInput
    higher_is_better = True
    unit = "%"

    def __init__(
        self,
        max_n: int = 4,
        pad_token: int | None = None,
        smoothing: BleuSmoothing = BleuSmoothing.NONE,
    ) -> None:
        super().__init__()
        if not isinstance(max_n, int) or max_n < 1:
            raise ValueError(f"`max_n` must be an int >= 1. Received: max_n={max_n!r}.")
        self.max_n = max_n
        self.pad_token = pad_token
        self.smoothing = _smoothing(smoothing)
        self.name = f"BLEU-{max_n}"

    @classmethod
    def with_max_n(cls, max_n: int) -> BleuScore:
        """BLEU up to `max_n`-grams (Burn's constructor)."""
        return cls(max_n)

    def with_pad_token(self, index: int) -> BleuScore:
        """Burn's builder method; returns a new metric."""
        return self._replace(pad_token=index)

    def with_smoothing(self, smoothing: BleuSmoothing) -> BleuScore:
        """Burn's builder method; returns a new metric."""
        return self._replace(smoothing=_smoothing(smoothing))

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's n-gram counts; returns the batch's BLEU in percent (a device tensor)."""
        data = adapt(item, BleuInput)
        check_tokens(type(self).__name__, data.outputs, data.targets)
        candidate_lengths = length_before_pad(data.outputs, self.pad_token)
        reference_lengths = length_before_pad(data.targets, self.pad_token)
        orders = [
            ngram_matches(data.outputs, data.targets, candidate_lengths, reference_lengths, n)
            for n in range(1, self.max_n + 1)
        ]
        counts = torch.stack(
            [c for c, _ in orders]
            + [t for _, t in orders]
            + [candidate_lengths.sum(), reference_lengths.sum()]
        ).to(accumulate_dtype(data.outputs.device))
        self.state.add(counts, data.batch_size)
        return NumericEntry(self.score(counts), data.batch_size)

    def value(self) -> torch.Tensor:
        """BLEU of the epoch's summed counts (`state.sum`), in percent; NaN before any."""
        counts = self.state.sum
        if not isinstance(counts, torch.Tensor) or counts.dim() == 0:
            return torch.tensor(math.nan, dtype=torch.float64)
        return self.score(counts)

    def score(self, counts: torch.Tensor) -> torch.Tensor:
        """BLEU in percent of `[clipped₁..ₙ, total₁..ₙ, candidate length, reference length]`."""
        n = self.max_n
        clipped, total = counts[:n], counts[n : 2 * n]
        candidate, reference = counts[2 * n], counts[2 * n + 1]
        unmatched = clipped == 0
        if self.smoothing.kind == "add_epsilon":
            smoothed = self.smoothing.epsilon / total
        elif self.smoothing.kind == "exponential":
            multiplier = torch.pow(2.0, unmatched.to(counts.dtype).cumsum(0))
            smoothed = 1.0 / (multiplier * total)
        else:
            smoothed = torch.zeros_like(total)
        precision = torch.where(unmatched, smoothed, clipped / total)
        log_mean = precision.log().mean()
        brevity = torch.where(candidate < reference, 1.0 - reference / candidate, 0.0)
        bleu = torch.exp(brevity + log_mean) * 100.0
        zero = (candidate == 0) | (total == 0).any()
        return torch.where(zero, 0.0, torch.nan_to_num(bleu, nan=0.0))


def _smoothing(value: Any) -> BleuSmoothing:
    if not isinstance(value, BleuSmoothing):
        raise ValueError(
            "`smoothing` must be BleuSmoothing.NONE, BleuSmoothing.add_epsilon(eps) or "
            f"BleuSmoothing.EXPONENTIAL. Received: {value!r}."
        )
    return value

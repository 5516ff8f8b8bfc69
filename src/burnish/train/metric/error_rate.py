"""Character and word error rates over the epoch (Burn's `CharErrorRate`, `WordErrorRate`).

Both are `100 · Σ edit distance / Σ reference length` over token indices: the tokens are
characters for CER and words for WER (Burn's convention; tokenise accordingly). The epoch value
pools every sequence of the epoch (corpus-level, as torchmetrics' `CharErrorRate` and
`WordErrorRate`), which is Burn's aggregation — its batch values weighted by reference tokens —
except for a batch without any reference token: Burn gives it the value 0 and the weight 0,
dropping its edits; here its edits count (an epoch with edits and no reference token: inf).
Padding, with `pad_token` (Burn's rules, kept): CER compares each sequence's first `k` tokens,
`k` its number of non-pad tokens; WER compares the tokens before the first pad.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.sequence import (
    TokenSequences,
    check_tokens,
    edit_distance,
    length_before_pad,
    length_without_pad,
)
from burnish.train.metric.state import StatefulNumeric

__all__ = ["CerInput", "CharErrorRate", "WerInput", "WordErrorRate"]


class CerInput(TokenSequences):
    """Input of `CharErrorRate`: predicted and reference token indices (`TokenSequences`)."""


@dataclasses.dataclass
class WerInput(CerInput):
    """Input of `WordErrorRate` (fields as `CerInput`; the tokens are words)."""


class _ErrorRate(StatefulNumeric):
    """`100 · edit distance / reference tokens`, pooled over the epoch."""

    higher_is_better = False
    unit = "%"
    _input: type[CerInput] = CerInput
    _lengths: Callable[[torch.Tensor, int | None], torch.Tensor]

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, index: int) -> Any:
        """Burn's builder method; returns a new metric."""
        return self._replace(pad_token=index)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's edit distances; returns its error rate in percent (a device tensor,
        0 when its references are empty, as Burn)."""
        data: CerInput = adapt(item, self._input)
        check_tokens(type(self).__name__, data.outputs, data.targets)
        lengths = type(self)._lengths
        reference_lengths = lengths(data.targets, self.pad_token)
        output_lengths = lengths(data.outputs, self.pad_token)
        distance = edit_distance(data.targets, data.outputs, reference_lengths, output_lengths)
        tokens = reference_lengths.sum()
        rate = self.state.add(distance.sum() * 100.0, tokens)
        return NumericEntry(torch.where(tokens > 0, rate, 0.0), data.batch_size)


class CharErrorRate(_ErrorRate):
    """Character error rate in percent (Burn: `CharErrorRate`, name `CER`).

    Args:
        pad_token: tokens equal to it are padding (see the module's notes).

    Example:
        >>> import torch
        >>> metric = CharErrorRate()
        >>> outputs, targets = torch.tensor([[1, 2], [3, 5]]), torch.tensor([[1, 3], [3, 4]])
        >>> _ = metric.update(CerInput(outputs, targets), None)
        >>> float(metric.value())
        50.0
    """

    input_type = _input = CerInput
    _lengths = staticmethod(length_without_pad)

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__(pad_token)
        self.name = "CER"


class WordErrorRate(_ErrorRate):
    """Word error rate in percent (Burn: `WordErrorRate`, name `WER`): each token a word.

    Args:
        pad_token: a sequence ends at its first token equal to it.
    """

    input_type = _input = WerInput
    _lengths = staticmethod(length_before_pad)

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__(pad_token)
        self.name = "WER"

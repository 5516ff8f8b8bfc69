"""ROUGE-L over the epoch (Burn main's `RougeLScore`, Lin 2004).

Per sequence, the F1 of the longest common subsequence: precision `LCS / candidate length`,
recall `LCS / reference length`; two empty sequences score 100 %, one empty 0 (Burn's). The
epoch value is the mean F1 over every sequence of the epoch (torchmetrics' `ROUGEScore`
`rougeL_fmeasure`): the state's totals are the F1 sum and the sequence count.
"""

from __future__ import annotations

from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.sequence import (
    TokenSequences,
    check_tokens,
    lcs_length,
    length_before_pad,
)
from burnish.train.metric.state import StatefulNumeric, accumulate_dtype

__all__ = ["RougeLInput", "RougeLScore"]


class RougeLInput(TokenSequences):
    """Input of `RougeLScore`: predicted and reference token indices (`TokenSequences`)."""


class RougeLScore(StatefulNumeric):
    """ROUGE-L F1 in percent, the mean over the epoch's sequences (Burn: `RougeLScore`,
    name `ROUGE-L`).

    Args:
        pad_token: a sequence ends at its first token equal to it.
    """

    input_type = RougeLInput
    higher_is_better = True
    unit = "%"

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token
        self.name = "ROUGE-L"

    def with_pad_token(self, index: int) -> RougeLScore:
        """Burn's builder method; returns a new metric."""
        return self._replace(pad_token=index)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata | None) -> NumericEntry:
        """Add a batch's F1 scores; returns their mean in percent (a device tensor)."""
        data = adapt(item, RougeLInput)
        check_tokens(type(self).__name__, data.outputs, data.targets)
        candidate = length_before_pad(data.outputs, self.pad_token)
        reference = length_before_pad(data.targets, self.pad_token)
        common = lcs_length(data.targets, data.outputs, reference, candidate)
        dtype = accumulate_dtype(data.outputs.device)
        common, candidate, reference = (t.to(dtype) for t in (common, candidate, reference))
        # F1 = 2 P R / (P + R) = 2 LCS / (candidate + reference)
        lengths = candidate + reference
        f1 = 2.0 * common / torch.where(lengths > 0, lengths, 1.0)
        f1 = torch.where(lengths == 0, 1.0, f1) * 100.0
        mean = self.state.add(f1.sum(), data.batch_size)
        return NumericEntry(mean, data.batch_size)

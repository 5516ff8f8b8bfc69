"""Perplexity of a language model (Burn's `PerplexityMetric`)."""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from burnish.train.metric.base import MetricMetadata, NumericEntry, adapt
from burnish.train.metric.state import StatefulNumeric

__all__ = ["PerplexityInput", "PerplexityMetric"]


@dataclasses.dataclass
class PerplexityInput:
    """Input of `PerplexityMetric`.

    Attributes:
        outputs: logits, shape `[num_tokens, vocab_size]` (flatten batch and sequence).
        targets: token indices, shape `[num_tokens]`.
    """

    outputs: torch.Tensor
    targets: torch.Tensor

    @property
    def batch_size(self) -> int:
        """The number of items in the batch (the first dimension of `outputs`)."""
        return self.outputs.shape[0]


class PerplexityMetric(StatefulNumeric):
    """`exp(mean negative log-likelihood per token)` over the epoch.

    Epoch value: `exp(sum of token NLL / number of non-pad tokens)` over every token of the
    epoch, as Burn does — not a mean of batch perplexities. Its state holds the two totals
    (`state.sum`: the NLL, `state.count`: the tokens) and `finish` is `exp`. Range [1, inf]:
    a target whose logit is -inf has probability 0, so infinite perplexity. A batch of
    padding only adds nothing (its own entry, the batch's perplexity, is NaN) and an epoch of
    padding only has no value (NaN). A NaN or +inf logit in a token's row, or a row of -inf
    only, makes that row's log-probabilities NaN, and so the epoch value NaN.

    Args:
        pad_token: targets equal to it are ignored.
    """

    input_type = PerplexityInput
    higher_is_better = False

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token
        self.name = "Perplexity"

    def with_pad_token(self, index: int) -> PerplexityMetric:
        """Burn's builder method; returns a new metric."""
        return self._replace(pad_token=index)

    @torch.no_grad()
    def update(self, item: Any, metadata: MetricMetadata) -> NumericEntry:
        """Add a batch; returns its perplexity as a device tensor."""
        data = adapt(item, PerplexityInput)
        outputs, targets = data.outputs, data.targets
        if outputs.ndim != 2 or targets.shape != outputs.shape[:1]:
            raise ValueError(
                "PerplexityMetric expects outputs [num_tokens, vocab_size] and targets "
                f"[num_tokens]. Received: outputs {list(outputs.shape)}, targets "
                f"{list(targets.shape)}. Flatten the sequence dimension into the first one."
            )
        keep = None if self.pad_token is None else targets != self.pad_token
        safe_targets = targets if keep is None else targets.masked_fill(~keep, 0)
        log_probs = outputs.float().log_softmax(dim=1)
        nll = -log_probs.gather(1, safe_targets.long().unsqueeze(1)).squeeze(1)
        if keep is None:
            mean_nll = self.state.add(nll.sum(), targets.shape[0])
        else:
            mean_nll = self.state.add(torch.where(keep, nll, 0.0).sum(), keep.sum())
        return NumericEntry(mean_nll.exp(), data.batch_size)

    def finish(self, mean: torch.Tensor) -> torch.Tensor:
        """`exp(mean)`: the perplexity of the mean NLL per token `state.sum / state.count`."""
        return mean.exp()

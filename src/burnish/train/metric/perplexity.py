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

    The epoch value pools the log-likelihoods of all (non-pad) tokens of the epoch, as Burn
    does; it is not a mean of batch perplexities. Each entry is the batch's perplexity.

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
        """Burn's builder method; returns the metric."""
        self.pad_token = index
        return self

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
            mean_nll = self.state.add((nll * keep).sum(), keep.sum())
        return NumericEntry(mean_nll.exp(), data.batch_size)

    def value(self) -> torch.Tensor:
        """`exp(total nll / total tokens)` of the epoch so far (0-dim, no host sync)."""
        return self.state.mean().exp()

"""Perplexity: pooled over the epoch, padding, entries."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from burnish.train.metric import PerplexityInput, PerplexityMetric

from tests.train.metric.helpers import metadata


def test_uniform_logits_give_the_vocabulary_size() -> None:
    metric = PerplexityMetric()
    metric.update(PerplexityInput(torch.zeros(6, 7), torch.arange(6)), metadata())
    assert float(metric.value()) == pytest.approx(7.0)


def test_epoch_pools_tokens_not_batch_perplexities() -> None:
    gen = torch.Generator().manual_seed(0)
    batches = [
        PerplexityInput(torch.randn(n, 5, generator=gen), torch.randint(0, 5, (n,), generator=gen))
        for n in (2, 9)
    ]
    metric = PerplexityMetric()
    entries = [metric.update(b, metadata(i + 1)) for i, b in enumerate(batches)]
    pooled = math.exp(
        F.cross_entropy(
            torch.cat([b.outputs for b in batches]), torch.cat([b.targets for b in batches])
        )
    )
    assert float(metric.value()) == pytest.approx(pooled, rel=1e-6)
    assert float(entries[0].value) == pytest.approx(
        math.exp(F.cross_entropy(batches[0].outputs, batches[0].targets)), rel=1e-6
    )


def test_pad_token_matches_cross_entropy_ignore_index() -> None:
    gen = torch.Generator().manual_seed(1)
    outputs = torch.randn(12, 5, generator=gen)
    targets = torch.randint(0, 5, (12,), generator=gen)
    targets[::3] = -100  # PyTorch's ignore_index, outside the vocabulary
    metric = PerplexityMetric().with_pad_token(-100)
    metric.update(PerplexityInput(outputs, targets), metadata())
    expected = math.exp(F.cross_entropy(outputs, targets, ignore_index=-100))
    assert float(metric.value()) == pytest.approx(expected, rel=1e-6)


def test_lower_is_better_and_shapes_are_checked() -> None:
    assert PerplexityMetric.higher_is_better is False
    with pytest.raises(ValueError, match=r"Flatten the sequence dimension"):
        PerplexityMetric().update(PerplexityInput(torch.zeros(2, 3, 5), torch.zeros(2, 3)), None)

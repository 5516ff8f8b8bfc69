"""Shared test helpers: a seeded tiny model and tolerant comparisons."""

from __future__ import annotations

import torch
from torch import nn

import burnish as bn


def tiny_model(seed: int = 0, in_features: int = 4, hidden: int = 8, out: int = 3) -> nn.Module:
    """A small deterministic MLP (two linears with a ReLU)."""
    bn.seed(seed)
    return nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, out))


def assert_close(actual, expected, atol: float = 1e-6, rtol: float = 1e-6) -> None:
    """`torch.testing.assert_close` over tensors, or dicts/lists of them."""
    if isinstance(expected, dict):
        assert set(actual) == set(expected), f"keys differ: {set(actual) ^ set(expected)}"
        for key in expected:
            assert_close(actual[key], expected[key], atol, rtol)
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, atol, rtol)
    else:
        torch.testing.assert_close(
            torch.as_tensor(actual), torch.as_tensor(expected), atol=atol, rtol=rtol
        )

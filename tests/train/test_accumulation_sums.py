"""Gradient accumulation sums (as Burn's), where Lightning and a plain PyTorch loop that divides
the loss by n average (issue 41, item 9; docs/from-lightning.md says what to change).

`n` accumulated batches of `b` items take one optimizer step with `n` times the gradient of one
batch of `n * b` items (each batch's loss a mean): divide the rate (or the loss) by `n`, and
multiply a gradient-norm clipping threshold by `n`, to get the large batch's step. With Adam
(scale-invariant up to epsilon) the same rate gives the large batch's step, and `lr / n` only
`1 / n` of it (issue N2, item 1)."""

from __future__ import annotations

import torch

from burnish.optim import AdamConfig, GradientClippingConfig, SgdConfig
from burnish.train import LearnerBuilder
from burnish.train.renderer import NullRenderer

from tests.helpers import assert_close
from tests.train.test_accumulation import Regression, batches

N, LR = 3, 0.1


def step(directory, loader, lr, accumulation=None, clip=None, adam=False):
    """The parameters' change after the optimizer steps over `loader` (one epoch)."""
    builder = LearnerBuilder(directory).renderer(NullRenderer()).num_epochs(1)
    if accumulation is not None:
        builder = builder.grads_accumulation(accumulation)
    clipping = None if clip is None else GradientClippingConfig.norm(clip)
    model = Regression()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    if adam:
        optim = AdamConfig(grad_clipping=clipping).init()
    else:
        optim = SgdConfig(gradient_clipping=clipping).init()
    result = builder.build(model, optim, lr).fit(loader, loader[:1])
    return {k: v - before[k] for k, v in result.model.state_dict().items()}


def one_batch(small):
    return [tuple(torch.cat(parts) for parts in zip(*small))]


def test_n_accumulated_batches_step_n_times_one_batch_of_n_times_the_items(tmp_path):
    small = batches(N)  # N batches of 4 items
    summed = step(tmp_path / "accumulated", small, LR, accumulation=N)
    large = step(tmp_path / "large", one_batch(small), LR)
    for name, change in large.items():
        assert_close(summed[name], N * change, atol=1e-6, rtol=1e-5)
        assert not torch.allclose(summed[name], change)  # not the average
    averaged = step(tmp_path / "rate", small, LR / N, accumulation=N)  # the fix: lr / n
    for name, change in large.items():
        assert_close(averaged[name], change, atol=1e-6, rtol=1e-5)


def test_with_clipping_the_threshold_scales_with_n(tmp_path):
    small, threshold = batches(N), 0.01  # the gradients' norms are far above it: clipped
    large = step(tmp_path / "large", one_batch(small), LR, clip=threshold)
    same = step(tmp_path / "scaled", small, LR / N, accumulation=N, clip=N * threshold)
    unscaled = step(tmp_path / "unscaled", small, LR / N, accumulation=N, clip=threshold)
    for name, change in large.items():
        assert_close(same[name], change, atol=1e-7, rtol=1e-5)
        assert_close(unscaled[name], change / N, atol=1e-7, rtol=1e-5)  # clipped n times harder


def test_with_adam_the_same_rate_gives_the_averaged_step(tmp_path):
    small = batches(2 * N)  # two optimizer steps of N accumulated batches
    large_batches = one_batch(small[:N]) + one_batch(small[N:])
    large = step(tmp_path / "large", large_batches, LR, adam=True)
    same = step(tmp_path / "same", small, LR, accumulation=N, adam=True)
    for name, change in large.items():
        assert change.abs().min() > LR / 2  # Adam's early steps are about lr per element
        # The summed gradients are N times the large batch's; Adam divides the scale out, up to
        # epsilon (1e-5) against gradients of order 0.1-1: a relative effect far below 1e-3.
        assert_close(same[name], change, atol=1e-4 * LR, rtol=1e-3)
    # Lightning's advice for SGD, lr / n, makes Adam's (first) step 1/n of the averaged one.
    first = step(tmp_path / "first", one_batch(small[:N]), LR, adam=True)
    divided = step(tmp_path / "divided", small[:N], LR / N, accumulation=N, adam=True)
    for name, change in first.items():
        assert_close(divided[name], change / N, atol=1e-4 * LR, rtol=1e-3)

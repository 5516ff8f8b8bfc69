"""docs/burn.md, Backend, tensors and modules: the rows that say "same", run as Burn's idiom."""

from __future__ import annotations

import math

import torch
from torch import nn

import burnish as bn

from tests.docs.burn_rows import row


class Model(bn.Module):
    """The book's MNIST model, shrunk: a conv, dropout and a linear."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3)
        self.dropout = nn.Dropout(0.5)
        self.linear1 = nn.Linear(8 * 26 * 26, 10)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(images.unsqueeze(1)))
        return self.linear1(self.dropout(x.flatten(1)))


@row("nn::conv::Conv2dConfig::new([1, 8], [3, 3]).init(device)")
def test_conv2d_has_burns_shapes_defaults_and_init_range():
    bn.seed(0)
    conv = nn.Conv2d(1, 8, kernel_size=3)
    # Burn's defaults: stride 1, dilation 1, groups 1, `PaddingConfig2d::Valid`, a bias.
    assert conv.weight.shape == (8, 1, 3, 3) and conv.bias is not None
    assert conv(torch.zeros(2, 1, 28, 28)).shape == (2, 8, 26, 26)
    # Burn's KaimingUniform(gain 1/sqrt(3)) on weight and bias: U(-1/sqrt(fan_in), +...),
    # fan_in = 1 * 3 * 3; PyTorch's default init draws from the same range.
    bound = 1 / math.sqrt(9)
    for tensor in (conv.weight, conv.bias):
        assert tensor.abs().max() <= bound
    assert conv.weight.abs().max() > bound / 2  # not collapsed to zero


@row("model.num_params()")
def test_num_params_counts_parameter_elements():
    model = Model()
    expected = (8 * 1 * 3 * 3 + 8) + (8 * 26 * 26 * 10 + 10)
    assert model.num_params() == expected
    assert bn.num_params(nn.Linear(3, 2)) == 3 * 2 + 2


@row("model.valid()")
def test_valid_is_the_inference_twin():
    bn.seed(0)
    model = Model()
    images = torch.randn(2, 28, 28)
    inference = model.valid()
    first, second = inference(images), inference(images)
    assert torch.equal(first, second)  # dropout off
    assert not first.requires_grad  # no autodiff, as Burn's inner backend
    assert model.training  # the training model keeps its mode
    with torch.no_grad():
        model.linear1.bias.add_(1.0)  # the same parameters: updates show in the twin
    assert torch.allclose(inference(images), first + 1.0, atol=1e-5)


@row("model.fork(&device) / model.to_device(&device)")
def test_fork_and_to_device():
    bn.seed(0)
    model = Model()
    cpu = bn.device("cpu")
    forked = model.fork(cpu)
    assert forked is not model and forked.conv1.weight.device == cpu
    assert torch.equal(forked.conv1.weight, model.conv1.weight)
    # Burn's fork gives the module its own autodiff graph: its gradients are its own.
    grads = bn.backward(forked(torch.ones(1, 28, 28)).sum())
    assert bn.grad(forked.conv1.weight, grads) is not None
    assert bn.grad(model.conv1.weight, grads) is None
    with torch.no_grad():
        forked.linear1.bias.zero_()
    assert not torch.equal(forked.linear1.bias, model.linear1.bias)
    moved = model.to_device(cpu)
    assert moved is model and all(p.device == cpu for p in moved.parameters())

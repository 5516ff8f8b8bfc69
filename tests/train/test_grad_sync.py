"""GradientSync in one real Gloo process: buckets launch during the backward pass, in order,
and the averages come back as the optimizer's gradients. (Two processes: test_distributed.py.)"""

from __future__ import annotations

import datetime

import pytest
import torch
import torch.distributed as dist
from torch import nn

import burnish as bn
from burnish.optim import GradientsParams
from burnish.train.parallel.grad_sync import GradientSync


@pytest.fixture(scope="module", autouse=True)
def process_group():
    store = dist.HashStore()
    dist.init_process_group(
        "gloo", store=store, rank=0, world_size=1, timeout=datetime.timedelta(seconds=30)
    )
    yield
    dist.destroy_process_group()


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(8, 8)
        self.second = nn.Linear(8, 8)
        self.head = nn.Linear(8, 1)
        self.spare = nn.Linear(8, 1)

    def loss(self, inputs: torch.Tensor, spare: bool = False) -> torch.Tensor:
        hidden = self.second(torch.relu(self.first(inputs)))
        out = self.head(hidden) + (self.spare(hidden) if spare else 0)
        return out.square().mean()


def test_buckets_launch_during_the_backward_pass_in_reverse_order():
    bn.seed(0)
    model, inputs = Net(), torch.randn(4, 8)
    sync = GradientSync(world_size=1, bucket_bytes=8 * 8 * 4)
    sync.prepare(model)
    # Reverse registration order, 256 bytes per bucket.
    assert [b.names for b in sync.buckets] == [
        ["spare.bias", "spare.weight", "head.bias", "head.weight", "second.bias"],
        ["second.weight"],
        ["first.bias"],
        ["first.weight"],
    ]
    launched = []
    model.second.weight.register_post_accumulate_grad_hook(lambda _: launched.append(sync._next))
    grads = GradientsParams.from_grads(bn.backward(model.loss(inputs, spare=True)), model)
    # Once `second.weight` has its gradient, the first two buckets are on their way, while
    # the backward pass has still to reach `first`.
    assert launched == [2]
    assert sync._next == len(sync.buckets)
    expected = {name: grad.clone() for name, grad in grads.items()}
    averaged = sync.average(grads)
    assert sorted(averaged.ids()) == sorted(expected)
    for name, grad in averaged.items():
        torch.testing.assert_close(grad, expected[name], rtol=0, atol=0)
    sync.close()


def test_a_parameter_without_gradient_holds_back_its_bucket_and_gets_none():
    bn.seed(0)
    model, inputs = Net(), torch.randn(4, 8)
    sync = GradientSync(world_size=1, bucket_bytes=8 * 8 * 4)
    sync.prepare(model)
    grads = GradientsParams.from_grads(bn.backward(model.loss(inputs)), model)
    assert sync._next == 0  # `spare` has no gradient: its bucket (the first) waits, so all do
    averaged = sync.average(grads)
    assert "spare.weight" not in averaged and "head.weight" in averaged
    assert all(bucket.launched for bucket in sync.buckets)
    sync.close()


def test_without_overlap_nothing_launches_before_average():
    model, inputs = Net(), torch.randn(4, 8)
    sync = GradientSync(world_size=1, overlap=False)
    sync.prepare(model)
    grads = GradientsParams.from_grads(bn.backward(model.loss(inputs, spare=True)), model)
    assert not any(bucket.launched for bucket in sync.buckets)
    assert len(sync.average(grads)) == 8


def test_a_gradient_changed_after_its_bucket_launched_is_an_error():
    model, inputs = Net(), torch.randn(4, 8)
    sync = GradientSync(world_size=1)
    sync.prepare(model)
    grads = GradientsParams.from_grads(bn.backward(model.loss(inputs, spare=True)), model)
    grads.get("head.bias").add_(1.0)
    with pytest.raises(RuntimeError, match="changed after the backward pass"):
        sync.average(grads)


def test_close_removes_the_hooks_and_a_new_parameter_rebuilds_the_buckets():
    model = Net()
    sync = GradientSync(world_size=1)
    sync.prepare(model)
    assert len(model.head.weight._post_accumulate_grad_hooks) == 1
    model.extra = nn.Linear(2, 2)
    sync.prepare(model)
    assert "extra.weight" in sync.buckets[0].names
    assert len(model.head.weight._post_accumulate_grad_hooks) == 1  # not installed twice
    sync.close()
    assert not model.head.weight._post_accumulate_grad_hooks

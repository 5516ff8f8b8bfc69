"""bn.backward / bn.grad / GradientsParams / GradientsAccumulator."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.optim import (
    Gradients,
    GradientsAccumulator,
    GradientsParams,
    MomentumConfig,
    SgdConfig,
)
from burnish.optim import (
    grads as grads_module,
)

from tests.helpers import assert_close, tiny_model


def _reference(loss_fn, model):
    """Gradients of `loss_fn()` by plain autograd, keyed by qualified name."""
    names, params = zip(*model.named_parameters())
    values = torch.autograd.grad(loss_fn(), params)
    return dict(zip(names, values))


def test_backward_matches_autograd_and_ids_are_qualified_names():
    model = tiny_model()
    x = torch.randn(5, 4)
    expected = _reference(lambda: model(x).pow(2).mean(), model)
    grads = GradientsParams.from_grads(bn.backward(model(x).pow(2).mean()), model)
    assert sorted(grads.ids()) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    assert_close(dict(grads.items()), expected)
    assert grads.get("2.bias") is grads.get(model[2].bias)


def test_stale_grad_never_leaks_in_and_grad_is_left_untouched():
    model = tiny_model()
    x = torch.randn(5, 4)
    stale = torch.full_like(model[0].weight, 100.0)
    model[0].weight.grad = stale
    expected = _reference(lambda: model(x).sum(), model)
    grads = GradientsParams.from_grads(bn.backward(model(x).sum()), model)
    assert_close(grads.get("0.weight"), expected["0.weight"])
    assert model[0].weight.grad is stale and bool((stale == 100.0).all())
    assert model[2].weight.grad is None


def test_grad_of_any_leaf_and_of_unrelated_tensor():
    x = torch.randn(3, requires_grad=True)
    unrelated = torch.randn(3, requires_grad=True)
    grads = bn.backward((x**2).sum())
    assert_close(bn.grad(x, grads), 2 * x.detach())
    assert bn.grad(unrelated, grads) is None
    assert isinstance(grads, bn.Gradients) and len(grads) == 1


def test_non_scalar_loss_is_seeded_with_ones():
    x = torch.randn(3, requires_grad=True)
    assert_close(bn.grad(x, bn.backward(x * 3)), torch.full((3,), 3.0))


def test_backward_of_a_tensor_without_graph_fails():
    with pytest.raises(ValueError, match="does not require gradients"):
        bn.backward(torch.ones(()))
    with pytest.raises(TypeError, match=r"must be a torch\.Tensor"):
        bn.backward(1.0)


def test_from_module_removes_its_grads_and_from_grads_takes_the_rest():
    model = tiny_model()
    grads = bn.backward(model(torch.randn(2, 4)).sum())
    first = GradientsParams.from_module(grads, model[0])
    assert sorted(first.ids()) == ["bias", "weight"]
    rest = GradientsParams.from_grads(grads, model)
    assert sorted(rest.ids()) == ["2.bias", "2.weight"]
    assert len(grads) == 0


def test_from_params_by_tensor_or_name_and_foreign_param_fails():
    model = tiny_model()
    grads = bn.backward(model(torch.randn(2, 4)).sum())
    bias = GradientsParams.from_params(grads, model[2], [model[2].bias])
    weight = GradientsParams.from_params(grads, model, ["2.weight"])
    assert bias.ids() == ["bias"] and weight.ids() == ["2.weight"]
    with pytest.raises(KeyError, match="not a parameter of Linear"):
        GradientsParams.from_params(grads, model[0], [model[2].bias])


def test_get_remove_len_contains():
    model = tiny_model()
    grads = GradientsParams.from_grads(bn.backward(model(torch.randn(2, 4)).sum()), model)
    assert len(grads) == 4 and "0.bias" in grads and model[0].bias in grads
    removed = grads.remove(model[0].bias)
    assert removed is not None and grads.get("0.bias") is None and len(grads) == 3
    assert grads.remove("0.bias") is None
    with pytest.raises(TypeError, match="qualified name"):
        grads.get(3)


@pytest.mark.parametrize("made_by", ["from_grads", "from_module"])
def test_indexing_and_iteration_read_like_get(made_by):
    """`grads[param]`, `in`, `len`, iteration, `dict(grads)`: `.get`'s meaning, KeyError when
    absent (Burn's `GradientsParams` is read with `get`; Python readers index)."""
    model = tiny_model()
    raw = bn.backward(model(torch.randn(2, 4)).sum())
    grads = getattr(GradientsParams, made_by)(raw, model)
    names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert list(grads) == names == grads.ids() and len(grads) == 4
    for name, param in zip(names, [model[0].weight, model[0].bias, model[2].weight, model[2].bias]):
        assert grads[name] is grads.get(name) is grads[param] and name in grads and param in grads
    assert dict(grads).keys() == set(names)
    assert all(torch.equal(a, b) for a, b in zip(grads.values(), dict(grads.items()).values()))
    grads.remove("0.bias")
    assert "0.bias" not in grads and list(grads) == ["0.weight", "2.weight", "2.bias"]
    with pytest.raises(KeyError, match=r"No gradient for parameter '0\.bias'.*holds 3: '0\.w"):
        grads["0.bias"]
    with pytest.raises(KeyError, match=r"tensor\(shape=\(8,\)\)"):
        grads[model[0].bias]
    with pytest.raises(TypeError, match="qualified name"):
        grads[3]


def test_from_grads_runs_no_graph_walk(monkeypatch):
    """The fast path asks autograd for the model's parameters directly."""

    def fail(loss):
        raise AssertionError("graph walked")

    monkeypatch.setattr(grads_module, "_graph_leaves", fail)
    model = tiny_model()
    grads = GradientsParams.from_grads(bn.backward(model(torch.randn(2, 4)).sum()), model)
    assert len(grads) == 4


def test_accumulator_sums_then_resets():
    model = tiny_model()
    x1, x2 = torch.randn(3, 4), torch.randn(3, 4)
    expected = _reference(lambda: model(x1).sum() + model(x2).sum(), model)
    acc = GradientsAccumulator()
    for x in (x1, x2):
        acc.accumulate(model, GradientsParams.from_grads(bn.backward(model(x).sum()), model))
    summed = acc.grads()
    assert_close(dict(summed.items()), expected)
    assert len(acc) == 0 and len(acc.grads()) == 0


def test_aliased_and_expanded_grads_are_owned():
    """Autograd may return one tensor for two inputs, or an expanded view; both are copied."""
    module = nn.Module()
    module.a = nn.Parameter(torch.ones(3))
    module.b = nn.Parameter(torch.ones(3))
    x = torch.tensor([1.0, 2.0, 3.0])
    grads = GradientsParams.from_grads(bn.backward(((module.a + module.b) * x).sum()), module)
    assert grads.get("a").data_ptr() != grads.get("b").data_ptr()
    grads = GradientsParams.from_grads(bn.backward(module.a.sum() + module.b.sum()), module)
    optim = SgdConfig(momentum=MomentumConfig(nesterov=True, dampening=0.0)).init()
    module = optim.step(0.5, module, grads)  # Nesterov writes into the gradients in place
    # first step: v = g = 1, update = g + 0.9 v = 1.9, p = 1 - 0.5 * 1.9
    assert_close(module.a.detach(), torch.full((3,), 0.05))
    assert_close(module.b.detach(), torch.full((3,), 0.05))


def test_ddp_ids_have_no_module_prefix(tmp_path):
    dist = torch.distributed
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    dist.init_process_group("gloo", init_method=f"file://{tmp_path}/store", rank=0, world_size=1)
    ddp = None
    try:
        model = tiny_model()
        x = torch.randn(4, 4)
        expected = _reference(lambda: model(x).sum(), model)
        ddp = nn.parallel.DistributedDataParallel(model)
        grads = GradientsParams.from_grads(bn.backward(ddp(x).sum()), ddp)
        assert sorted(grads.ids()) == sorted(expected)
        assert_close(dict(grads.items()), expected)
        assert all(p.grad is None for p in model.parameters())
        SgdConfig().init().step(0.1, ddp, grads)
        assert len(grads) == 0
    finally:
        # The wrapper (its reducer holds the group) goes first: freed after the group is
        # destroyed, PyTorch 2.13 can hang joining Gloo's threads (docs/distributed.md).
        del ddp
        dist.destroy_process_group()


def test_gradients_type_is_checked():
    with pytest.raises(TypeError, match=r"Gradients returned by bn\.backward"):
        GradientsParams.from_grads({}, tiny_model())
    assert Gradients.__name__ == "Gradients"


def test_accumulator_record_round_trip():
    import burnish as bn
    from burnish.optim import GradientsAccumulator, GradientsParams

    model = torch.nn.Linear(3, 2)
    x = torch.randn(4, 3)
    accumulator = GradientsAccumulator()
    accumulator.accumulate(model, GradientsParams.from_grads(bn.backward(model(x).sum()), model))
    record = accumulator.to_record()
    restored = GradientsAccumulator().load_record(record, model).grads()
    original = accumulator.grads()
    for name in ("weight", "bias"):
        assert torch.equal(restored.get(name), original.get(name))
    with pytest.raises(ValueError, match=r"gradients for \['other'\]"):
        GradientsAccumulator().load_record({"other": torch.zeros(1)}, model)

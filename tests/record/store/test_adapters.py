"""Burn's layout <-> PyTorch's: `PyTorchToBurnAdapter` writes files laid out as Burn reads them
(Linear weights `[in, out]`, norms' `gamma`/`beta`), `BurnToPyTorchAdapter` loads files Burn
wrote; convolutions and embeddings pass unchanged (burn-store's `adapter.rs` rules)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from burnish.record.store import (
    BurnpackStore,
    BurnToPyTorchAdapter,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    load_from,
    save_into,
)
from burnish.record.store.burnpack import PackReader, PackTensor, encode_chunks

BURN_MNIST = Path(__file__).with_name("data") / "burn_mnist_model.bpk"  # written by Burn

MODULES = {
    "linear": lambda: nn.Linear(3, 5),
    "conv1d": lambda: nn.Conv1d(2, 4, 3),
    "conv2d": lambda: nn.Conv2d(2, 4, (3, 2), groups=2),
    "conv_transpose2d": lambda: nn.ConvTranspose2d(2, 3, 2),
    "batch_norm": lambda: nn.BatchNorm2d(4),
    "layer_norm": lambda: nn.LayerNorm(6),
    "group_norm": lambda: nn.GroupNorm(2, 6),
    "embedding": lambda: nn.Embedding(7, 3),
}
#: What Burn's file holds for each torch state_dict name (name, transform).
BURN_NAMES = {
    "linear": {"weight": ("weight", "t"), "bias": ("bias", None)},
    "batch_norm": {"weight": ("gamma", None), "bias": ("beta", None)},
    "layer_norm": {"weight": ("gamma", None), "bias": ("beta", None)},
    "group_norm": {"weight": ("gamma", None), "bias": ("beta", None)},
}


class Net(nn.Module):
    """A module of each kind, nested as Burn models are."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.block = nn.Sequential(MODULES[kind]())


def randomized(module: nn.Module) -> nn.Module:
    with torch.no_grad():
        for tensor in module.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(torch.randn_like(tensor))
            else:
                tensor.fill_(3)
    return module


@pytest.mark.parametrize("kind", MODULES)
def test_pytorch_to_burn_writes_burns_layout(kind, tmp_path):
    model = randomized(Net(kind))
    path = tmp_path / "burn.bpk"
    save_into(model, BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    reader = PackReader.from_file(path)
    expected = {}
    for name, tensor in model.state_dict().items():
        param = name.rsplit(".", 1)[1]
        if param == "num_batches_tracked":
            continue  # Burn's BatchNorm has none, and Burn's loader refuses unused tensors
        burn_name, transform = BURN_NAMES.get(kind, {}).get(param, (param, None))
        expected[f"block.0.{burn_name}"] = tensor.t() if transform == "t" else tensor
    assert sorted(reader.names()) == sorted(expected)
    for name, tensor in expected.items():
        assert torch.equal(reader.tensor(name), tensor), name


@pytest.mark.parametrize("kind", MODULES)
def test_a_burn_layout_file_loads_through_burn_to_pytorch(kind, tmp_path):
    source = randomized(Net(kind))
    path = tmp_path / "burn.bpk"
    save_into(source, BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    target = Net(kind)
    result = load_from(
        target, BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter())
    )
    assert result.errors == [] and result.unused == []
    burn_lacks = ["block.0.num_batches_tracked"] if kind == "batch_norm" else []
    assert [path for path, _ in result.missing] == burn_lacks  # reported, not an error
    for name, tensor in source.state_dict().items():
        if name not in burn_lacks:
            assert torch.equal(target.state_dict()[name], tensor), name


def test_without_the_adapter_a_burn_layout_file_still_loads_right(tmp_path):
    """The file says it holds Burn's layout, so the store adapts it (issue 39, item 2)."""
    path = tmp_path / "burn.bpk"
    source = randomized(Net("linear"))
    source.block[0] = randomized(nn.Linear(4, 4))  # square: a wrong load would not fail
    save_into(source, BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    target = Net("linear")
    target.block[0] = nn.Linear(4, 4)
    result = load_from(target, BurnpackStore.from_file(path))
    assert result.errors == [] and result.unused == []
    assert torch.equal(target.block[0].weight, source.block[0].weight)


def test_a_file_laid_out_by_hand_as_burn_writes_it_loads(tmp_path):
    """Burn's names and shapes, written without burnish's adapter: Linear `[in, out]`."""
    weight = torch.arange(15.0).reshape(3, 5)  # [in, out]
    gamma, beta = torch.full((5,), 2.0), torch.full((5,), -1.0)
    tensors = [
        PackTensor.of("fc.weight", weight, 1),
        PackTensor.of("fc.bias", torch.ones(5), 2),
        PackTensor.of("norm.gamma", gamma, 3),
        PackTensor.of("norm.beta", beta, 4),
    ]
    path = tmp_path / "burn.bpk"
    path.write_bytes(b"".join(bytes(c) for c in encode_chunks(tensors)))
    model = nn.Module()
    model.fc, model.norm = nn.Linear(3, 5), nn.LayerNorm(5)
    load_from(model, BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter()))
    assert torch.equal(model.fc.weight, weight.t())
    assert torch.equal(model.norm.weight, gamma) and torch.equal(model.norm.bias, beta)
    x = torch.randn(2, 3)
    assert torch.allclose(model.fc(x), x @ weight + 1)  # Burn's forward: x @ W + b


def test_safetensors_exported_from_pytorch_for_burn(tmp_path):
    model = randomized(Net("batch_norm"))
    path = tmp_path / "for_burn.safetensors"
    save_into(model, SafetensorsStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    from safetensors.torch import load_file

    assert {"block.0.gamma", "block.0.beta", "block.0.running_var"} <= set(load_file(path))


class BurnMnist(nn.Module):
    """Burn's MNIST example model (examples/mnist-inference-web), in PyTorch."""

    def __init__(self) -> None:
        super().__init__()
        for name, (cin, cout) in {"conv1": (1, 64), "conv2": (64, 64)}.items():
            block = nn.Module()
            block.conv, block.norm = nn.Conv2d(cin, cout, 3), nn.BatchNorm2d(cout)
            setattr(self, name, block)
        self.fc1, self.fc2, self.fc3 = nn.Linear(1600, 128), nn.Linear(128, 128), nn.Linear(128, 10)


def test_burns_own_mnist_model_loads_into_pytorch():
    path = BURN_MNIST
    model = BurnMnist()
    store = BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter()).allow_partial()
    result = load_from(model, store)
    assert len(result.applied) == 18 and result.errors == [] and result.unused == []
    assert [p for p, _ in result.missing] == [
        "conv1.norm.num_batches_tracked",
        "conv2.norm.num_batches_tracked",
    ]
    reader = PackReader.from_file(path)
    assert torch.equal(model.fc1.weight, reader.tensor("fc1.weight").t())
    assert torch.equal(model.conv2.norm.weight, reader.tensor("conv2.norm.gamma"))

"""Whose layout a Burnpack file holds (issue 39, items 2 and 4): stores read it from the file's
metadata and adapt Burn's, load PyTorch's as it is, and refuse a file that does not say when it
matters. Files "for Burn" hold exactly what Burn's modules load (burn-nn's BatchNorm has
`gamma`, `beta`, `running_mean`, `running_var` and nothing else; burn-store's applier reports
any file tensor no module tensor takes as unused)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from burnish.errors import RecordError
from burnish.record.store import (
    BurnpackStore,
    BurnToPyTorchAdapter,
    IdentityAdapter,
    PyTorchToBurnAdapter,
    load_from,
    save_into,
)
from burnish.record.store.burnpack import PackReader, PackTensor, encode_chunks

BURN_MNIST = Path(__file__).with_name("data") / "burn_mnist_model.bpk"  # Burn's own file


class Square(nn.Module):
    """A square Linear (loads transposed without failing) and a BatchNorm."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.norm = nn.BatchNorm1d(4)


class BurnMnist(nn.Module):
    """Burn's MNIST example model (examples/mnist-inference-web), in PyTorch."""

    def __init__(self) -> None:
        super().__init__()
        for name, (cin, cout) in {"conv1": (1, 64), "conv2": (64, 64)}.items():
            block = nn.Module()
            block.conv, block.norm = nn.Conv2d(cin, cout, 3), nn.BatchNorm2d(cout)
            setattr(self, name, block)
        self.fc1, self.fc2, self.fc3 = nn.Linear(1600, 128), nn.Linear(128, 128), nn.Linear(128, 10)


def _random(module: nn.Module) -> nn.Module:
    with torch.no_grad():
        for tensor in module.state_dict().values():
            if tensor.is_floating_point():
                tensor.copy_(torch.randn_like(tensor))
            else:
                tensor.fill_(7)
    return module


def _write(path: Path, tensors: list[PackTensor], metadata: dict[str, str] | None = None) -> None:
    path.write_bytes(b"".join(bytes(c) for c in encode_chunks(tensors, metadata)))


def _burn_tensors(ids: bool) -> tuple[list[PackTensor], torch.Tensor]:
    weight = torch.arange(16.0).reshape(4, 4)  # Burn's [in, out]
    names = {"fc.weight": weight, "fc.bias": torch.ones(4), "norm.gamma": torch.full((4,), 2.0),
             "norm.beta": torch.zeros(4), "norm.running_mean": torch.zeros(4),
             "norm.running_var": torch.ones(4)}  # fmt: skip
    tensors = [PackTensor.of(n, t, i if ids else None) for i, (n, t) in enumerate(names.items())]
    return tensors, weight


def test_burns_idiom_loads_burns_own_file_without_an_adapter():
    # Burn: `model.load_from(&mut BurnpackStore::from_file("model.bpk"))?`
    model = BurnMnist()
    result = load_from(model, BurnpackStore.from_file(BURN_MNIST))
    reader = PackReader.from_file(BURN_MNIST)
    assert reader.metadata == {}  # Burn's ModuleRecord::save: no metadata, an id per tensor
    assert result.errors == [] and result.unused == [] and len(result.applied) == 18
    assert torch.equal(model.fc2.weight, reader.tensor("fc2.weight").t())  # square 128x128
    assert torch.equal(model.conv1.norm.weight, reader.tensor("conv1.norm.gamma"))


def test_a_file_burns_store_wrote_is_burns_layout(tmp_path):
    tensors, weight = _burn_tensors(ids=False)
    path = tmp_path / "burn.bpk"
    _write(path, tensors, {"format": "burnpack", "producer": "burn", "version": "0.22.0"})
    model = Square()
    load_from(model, BurnpackStore.from_file(path))
    assert torch.equal(model.fc.weight, weight.t())
    assert torch.equal(model.norm.weight, torch.full((4,), 2.0))


def test_a_file_for_burn_round_trips_through_burns_idiom(tmp_path):
    source = _random(Square())
    path = tmp_path / "for_burn.bpk"
    save_into(source, BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    assert PackReader.from_file(path).metadata["burnish.layout"] == "burn"
    target = Square()
    result = load_from(target, BurnpackStore.from_file(path))
    assert result.errors == [] and result.unused == []
    assert torch.equal(target.fc.weight, source.fc.weight)
    assert torch.equal(target.norm.weight, source.norm.weight)
    assert target.norm.num_batches_tracked.item() == 0  # Burn has none: PyTorch's stays


def test_a_file_for_burn_holds_exactly_what_burns_module_loads(tmp_path):
    path = tmp_path / "for_burn.bpk"
    save_into(_random(Square()),
              BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))  # fmt: skip
    names = sorted(PackReader.from_file(path).names())
    assert names == ["fc.bias", "fc.weight", "norm.beta", "norm.gamma", "norm.running_mean",
                     "norm.running_var"]  # fmt: skip
    burns = {n.rsplit(".", 1)[1] for n in PackReader.from_file(BURN_MNIST).names()}
    assert {n.rsplit(".", 1)[1] for n in names} <= burns  # the names Burn's own file uses


def test_a_pytorch_layout_file_refuses_the_burn_adapter(tmp_path):
    path = tmp_path / "torch.bpk"
    save_into(_random(Square()), BurnpackStore.from_file(path))
    assert PackReader.from_file(path).metadata["burnish.layout"] == "pytorch"
    store = BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter())
    with pytest.raises(RecordError, match=r"holds PyTorch's layout.*transpose.*Drop the adapter"):
        load_from(Square(), store)


def test_a_file_that_does_not_say_is_refused_when_it_matters(tmp_path):
    tensors, weight = _burn_tensors(ids=False)
    path = tmp_path / "unknown.bpk"
    _write(path, tensors)
    with pytest.raises(RecordError, match=r"does not say whose layout.*'fc.weight'.*"
                       r"BurnToPyTorchAdapter\(\).*IdentityAdapter\(\)"):  # fmt: skip
        load_from(Square(), BurnpackStore.from_file(path))
    model = Square()
    load_from(model, BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter()))
    assert torch.equal(model.fc.weight, weight.t())
    conv = nn.Sequential(nn.Conv1d(1, 1, 1))  # no layout-dependent tensor: loads as it is
    _write(
        path,
        [PackTensor.of("0.weight", torch.ones(1, 1, 1)), PackTensor.of("0.bias", torch.ones(1))],
    )
    assert load_from(conv, BurnpackStore.from_file(path)).errors == []


def test_an_explicit_identity_adapter_declares_pytorchs_layout(tmp_path):
    source = _random(Square())
    path = tmp_path / "plain.bpk"
    _write(path, [PackTensor.of(k, v) for k, v in source.state_dict().items()])
    target = Square()
    load_from(target, BurnpackStore.from_file(path).with_from_adapter(IdentityAdapter()))
    assert torch.equal(target.fc.weight, source.fc.weight)


def test_a_missing_norm_weight_points_to_the_adapter_not_a_lookalike(tmp_path):
    tensors, _ = _burn_tensors(ids=False)
    path = tmp_path / "unknown.bpk"
    _write(path, tensors)
    store = BurnpackStore.from_file(path).with_from_adapter(IdentityAdapter()).validate(False)
    hint = r"norm.weight \(the store holds Burn's 'gamma': load it with .with_from_adapter"
    with pytest.raises(RecordError, match=hint) as error:
        load_from(Square(), store)
    assert "did you mean 'norm.bias'" not in str(error.value)


def test_a_bad_layout_value_is_named(tmp_path):
    path = tmp_path / "bad.bpk"
    _write(path, [PackTensor.of("x", torch.ones(1))], {"burnish.layout": "tensorflow"})
    with pytest.raises(RecordError, match=r"`burnish.layout` is 'tensorflow'; expected 'burn'"):
        load_from(Square(), BurnpackStore.from_file(path))

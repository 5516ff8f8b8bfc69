"""Whose layout a safetensors file holds (issue 39, item 2), in Burn's idiom:
`model.load_from(SafetensorsStore.from_file(p))`.

burnish marks its files (`burnish.layout` in `__metadata__`); Burn's SafetensorsStore writes
`format: safetensors`, `producer: burn` and its version (burn-store's
`SafetensorsStore::default_metadata`) whichever adapter it saved through, so its files are
told by their tensors; every other file (PyTorch's `save_file(model.state_dict())`) loads as
PyTorch's layout, as before. "Burn's files" here are written with the safetensors library and
exactly Burn's metadata, in Burn's layout (Linear `[in, out]`, norms' `gamma`/`beta`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.record.store import (
    BurnToPyTorchAdapter,
    IdentityAdapter,
    PyTorchToBurnAdapter,
    SafetensorsStore,
)

BURN_METADATA = {"format": "safetensors", "producer": "burn", "version": "0.22.0"}


class Square(bn.Module):
    """Only a square Linear: its weight loads transposed without any error."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)


class Mixed(bn.Module):
    """A square Linear beside tensors that tell the layout (a non-square Linear, a norm)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.head = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)


def _distinct(module: nn.Module) -> nn.Module:
    with torch.no_grad():
        for i, tensor in enumerate(module.state_dict().values()):
            tensor.copy_(torch.arange(tensor.numel(), dtype=tensor.dtype).view_as(tensor) + i)
    return module


def _burn_layout(model: nn.Module) -> dict[str, torch.Tensor]:
    """What Burn's plain save of the same model holds: Linear `[in, out]`, `gamma`/`beta`."""
    names = {"norm.weight": "norm.gamma", "norm.bias": "norm.beta"}
    return {names.get(n, n): (t.t() if n.endswith("weight") and t.dim() == 2 else t).contiguous()
            for n, t in model.state_dict().items()}  # fmt: skip


def _metadata(path: Path) -> dict[str, str]:
    with safe_open(str(path), "pt") as file:
        return file.metadata()


def test_burns_idiom_loads_a_file_burns_store_wrote_in_burns_layout(tmp_path):
    # Burn: `model.save_into(&mut SafetensorsStore::from_file(p))`, then in burnish
    # `model.load_from(&mut SafetensorsStore::from_file(p))`, no adapter (Burn's book).
    source = _distinct(Mixed())
    path = tmp_path / "model.safetensors"
    save_file(_burn_layout(source), str(path), metadata=BURN_METADATA)
    model = Mixed()
    result = model.load_from(SafetensorsStore.from_file(path))
    assert result.errors == [] and result.unused == [] and result.missing == []
    for name, tensor in source.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    assert not torch.equal(model.fc.weight, model.fc.weight.t())  # the square one, not a no-op


def test_a_file_burn_saved_for_pytorch_loads_as_it_is(tmp_path):
    # Burn's book: `.with_to_adapter(BurnToPyTorchAdapter)` "for PyTorch", same metadata.
    source = _distinct(Mixed())
    path = tmp_path / "for_pytorch.safetensors"
    save_file(source.state_dict(), str(path), metadata=BURN_METADATA)
    model = Mixed()
    model.load_from(SafetensorsStore.from_file(path))
    assert torch.equal(model.fc.weight, source.fc.weight)
    assert torch.equal(model.norm.weight, source.norm.weight)


def test_a_burn_file_whose_tensors_do_not_tell_is_refused_until_the_adapter_says(tmp_path):
    source = _distinct(Square())
    path = tmp_path / "square.safetensors"
    save_file(_burn_layout(source), str(path), metadata=BURN_METADATA)
    refusal = r"by Burn \(`producer: burn`\).*Square's 'fc.weight' is a square Linear weight"
    with pytest.raises(RecordError, match=refusal):
        Square().load_from(SafetensorsStore.from_file(path))
    burn = Square()
    burn.load_from(SafetensorsStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter()))
    assert torch.equal(burn.fc.weight, source.fc.weight)
    kept = Square()
    kept.load_from(SafetensorsStore.from_file(path).with_from_adapter(IdentityAdapter()))
    assert torch.equal(kept.fc.weight, source.fc.weight.t())


def test_a_burn_file_holding_both_layouts_is_refused(tmp_path):
    tensors = _burn_layout(_distinct(Mixed()))
    tensors["head.weight"] = tensors["head.weight"].t().contiguous()  # PyTorch's [out, in]
    path = tmp_path / "both.safetensors"
    save_file(tensors, str(path), metadata=BURN_METADATA)
    with pytest.raises(RecordError, match=r"holds both layouts: 'norm.gamma' is Burn's, "
                       r"'head.weight' PyTorch's"):  # fmt: skip
        Mixed().load_from(SafetensorsStore.from_file(path))


def test_burnish_writes_the_layout_and_loads_its_burn_file_without_an_adapter(tmp_path):
    source = _distinct(Square())
    path = tmp_path / "for_burn.safetensors"
    source.save_into(SafetensorsStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    assert _metadata(path)["burnish.layout"] == "burn"
    with safe_open(str(path), "pt") as file:
        assert torch.equal(file.get_tensor("fc.weight"), source.fc.weight.t())
    model = Square()
    model.load_from(SafetensorsStore.from_file(path))
    assert torch.equal(model.fc.weight, source.fc.weight)
    cleared = tmp_path / "cleared.safetensors"
    source.save_into(SafetensorsStore.from_file(cleared).clear_metadata()
                     .with_to_adapter(PyTorchToBurnAdapter()))  # fmt: skip
    assert _metadata(cleared) == {"burnish.layout": "burn"}


def test_burnish_pytorch_layout_file_loads_as_it_is_and_refuses_burns_adapter(tmp_path):
    source = _distinct(Square())
    path = tmp_path / "plain.safetensors"
    source.save_into(SafetensorsStore.from_file(path))
    assert _metadata(path)["burnish.layout"] == "pytorch"
    model = Square()
    model.load_from(SafetensorsStore.from_file(path))
    assert torch.equal(model.fc.weight, source.fc.weight)
    with pytest.raises(RecordError, match=r"burnish.layout: pytorch.*Drop the adapter"):
        Square().load_from(
            SafetensorsStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter())
        )


@pytest.mark.parametrize("metadata", [None, {"format": "pt"}])
def test_a_file_pytorch_wrote_loads_as_pytorchs_layout_without_a_word(tmp_path, metadata):
    source = _distinct(Mixed())
    path = tmp_path / "torch.safetensors"
    save_file(source.state_dict(), str(path), metadata=metadata)
    model = Mixed()
    result = model.load_from(SafetensorsStore.from_file(path))
    assert result.errors == [] and result.unused == []
    for name, tensor in source.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name


def test_an_unknown_layout_value_is_refused(tmp_path):
    path = tmp_path / "odd.safetensors"
    save_file(Square().state_dict(), str(path), metadata={"burnish.layout": "tf"})
    with pytest.raises(RecordError, match=r"`burnish.layout` is 'tf'; expected 'burn' or "):
        Square().load_from(SafetensorsStore.from_file(path))


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    metadata=st.dictionaries(
        st.sampled_from(["burnish.layout", "producer", "format", ""]) | st.text(max_size=8),
        st.sampled_from(["burn", "pytorch", "", "BURN"]) | st.text(max_size=8),
        max_size=4,
    ),
    value=st.sampled_from([0.0, float("nan"), float("inf"), -1e38, 1e-45]),
)
def test_any_metadata_loads_or_is_refused_with_a_record_error(tmp_path, metadata, value):
    path = tmp_path / "any.safetensors"
    tensors = {"fc.weight": torch.full((4, 4), value), "fc.bias": torch.full((4,), value)}
    save_file(tensors, str(path), metadata=metadata)
    model = Square()
    try:
        model.load_from(SafetensorsStore.from_file(path))
    except RecordError as error:
        assert "burnish.layout" in str(error) or "producer: burn" in str(error)
    else:
        assert torch.equal(model.fc.weight, tensors["fc.weight"]) or value != value

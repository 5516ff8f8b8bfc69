"""burn-store API a porter reaches for (issue 39), each in Burn's idiom: `HalfPrecisionAdapter`,
`FloatCastAdapter`, `KeyRemapper::from_patterns`, `map_indices_contiguous` (function and store
builder), `skip_enum_variants` (burn-store `adapter.rs`, `keyremapper.rs`, `*/store.rs`)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from burnish.errors import RecordError
from burnish.record.store import (
    BurnpackStore,
    FloatCastAdapter,
    HalfPrecisionAdapter,
    KeyRemapper,
    PytorchStore,
    SafetensorsStore,
    TensorSnapshot,
    load_from,
    map_indices_contiguous,
    save_into,
)
from burnish.record.store.burnpack import PackReader


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.norm = nn.BatchNorm1d(2)
        self.ln = nn.LayerNorm(2)


def _dtypes(path) -> dict[str, str]:
    return {n: d.dtype for n, d in PackReader.from_file(path).descriptors.items()}


def test_half_precision_adapter_stores_f16_by_module_type(tmp_path):
    model, path = Net(), tmp_path / "half.bpk"
    save_into(model, BurnpackStore.from_file(path).with_to_adapter(HalfPrecisionAdapter()))
    dtypes = _dtypes(path)
    assert dtypes["fc.weight"] == "F16" and dtypes["ln.weight"] == "F16"
    assert dtypes["norm.weight"] == "F32"  # BatchNorm is not in Burn's default set
    loaded = Net()
    load_from(loaded, BurnpackStore.from_file(path).with_from_adapter(HalfPrecisionAdapter()))
    assert loaded.fc.weight.dtype == torch.float32
    assert torch.allclose(loaded.fc.weight, model.fc.weight, atol=1e-3)


def test_half_precision_adapter_with_and_without_module(tmp_path):
    path = tmp_path / "half.bpk"
    adapter = HalfPrecisionAdapter().without_module("LayerNorm").with_module("BatchNorm")
    save_into(Net(), BurnpackStore.from_file(path).with_to_adapter(adapter))
    dtypes = _dtypes(path)
    assert dtypes["ln.weight"] == "F32" and dtypes["norm.weight"] == "F16"
    assert dtypes["norm.num_batches_tracked"] == "I64"  # ints unchanged
    with pytest.raises(ValueError, match=r"received 'Lstm', which is not in the module set"):
        HalfPrecisionAdapter().without_module("Lstm")


def test_float_cast_adapter_casts_every_float(tmp_path):
    path = tmp_path / "bf16.bpk"
    save_into(Net(), BurnpackStore.from_file(path).with_to_adapter(FloatCastAdapter.to("BF16")))
    dtypes = _dtypes(path)
    assert {dtypes["fc.weight"], dtypes["norm.running_var"]} == {"BF16"}
    assert dtypes["norm.num_batches_tracked"] == "I64"
    with pytest.raises(ValueError, match=r"must be a float dtype.*received torch.int32"):
        FloatCastAdapter.to(torch.int32)


def test_key_remapper_from_patterns(tmp_path):
    source, path = Net(), tmp_path / "old.safetensors"
    save_into(source, SafetensorsStore.from_file(path))
    renamed = tmp_path / "renamed.safetensors"
    from safetensors.torch import load_file, save_file

    save_file({f"old.{k}": v for k, v in load_file(path).items()}, renamed)
    remapper = KeyRemapper.from_patterns([(r"^old\.", "")])
    target = Net()
    load_from(target, SafetensorsStore.from_file(renamed).remap(remapper))
    assert torch.equal(target.fc.weight, source.fc.weight)
    with pytest.raises(RecordError, match=r"Invalid key remapping regex '\('"):
        KeyRemapper.from_patterns([("(", "x")])


def _snapshots(names: list[str]) -> list[TensorSnapshot]:
    return [TensorSnapshot.from_tensor(n, torch.zeros(1)) for n in names]


def test_map_indices_contiguous_function_follows_burns_examples():
    block = "feature.layers.{}.conv_block.{}.weight"
    names = [block.format(0, 0), block.format(0, 2), block.format(2, 0), block.format(2, 2)]
    mapped, changes = map_indices_contiguous(_snapshots(names))
    assert [s.full_path for s in mapped] == [
        "feature.layers.0.conv_block.0.weight", "feature.layers.0.conv_block.1.weight",
        "feature.layers.1.conv_block.0.weight", "feature.layers.1.conv_block.1.weight",
    ]  # fmt: skip
    assert changes[3] == ("feature.layers.1.conv_block.1.weight", names[3])
    assert map_indices_contiguous([]) == ([], [])


@given(st.lists(st.lists(st.sampled_from(["a", "0", "2", "7", "10", "b"]), min_size=1,
                         max_size=4).map(".".join), unique=True, max_size=12))  # fmt: skip
def test_map_indices_contiguous_keeps_names_distinct_and_non_numbers(names):
    mapped, _ = map_indices_contiguous(_snapshots(names))
    assert len({s.full_path for s in mapped}) == len(names)
    for snapshot, name in zip(mapped, names, strict=True):
        keep = [p for p in name.split(".") if not p.isdigit()]
        assert [p for p in snapshot.path_stack if not p.isdigit()] == keep


def test_store_map_indices_contiguous_loads_a_gapped_file(tmp_path):
    gapped = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))  # fc.0, fc.2
    path = tmp_path / "gapped.pt"
    torch.save(gapped.state_dict(), path)
    dense = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))  # Burn's Vec: 0, 1
    load_from(dense, PytorchStore.from_file(path).map_indices_contiguous(True))
    assert torch.equal(dense[1].weight, gapped[2].weight)
    same = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))  # burnish's default: off
    assert load_from(same, PytorchStore.from_file(path)).errors == []
    assert torch.equal(same[2].weight, gapped[2].weight)


def test_skip_enum_variants_is_accepted_and_paths_stay_pytorchs(tmp_path):
    model, path = Net(), tmp_path / "m.safetensors"
    save_into(model, SafetensorsStore.from_file(path).skip_enum_variants(True))
    target = Net()
    load_from(target, SafetensorsStore.from_file(path).skip_enum_variants(True))
    assert torch.equal(target.fc.weight, model.fc.weight)

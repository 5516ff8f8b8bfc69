"""docs/burn.md, Records: the rows that say "same", run as Burn's idiom on real files."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.record import (
    BinFileRecorder,
    BinGzFileRecorder,
    BurnpackStore,
    BurnToPyTorchAdapter,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    PytorchStore,
    PyTorchToBurnAdapter,
    SafetensorsStore,
    SensitiveCompactRecorder,
)

from tests.docs.burn_rows import row


class Net(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear1 = nn.Linear(3, 4)
        self.norm = nn.LayerNorm(4)
        self.linear2 = nn.Linear(4, 2)


def net(seed: int) -> Net:
    bn.seed(seed)
    return Net()


def same_params(a: nn.Module, b: nn.Module, atol: float = 0.0) -> bool:
    return all(
        torch.allclose(x, y, atol=atol, rtol=0)
        for x, y in zip(a.state_dict().values(), b.state_dict().values())
    )


@row(
    "NamedMpkGzFileRecorder, BinFileRecorder, BinGzFileRecorder, PrettyJsonFileRecorder, "
    "JsonGzFileRecorder, SensitiveCompactRecorder"
)
def test_each_recorder_round_trips_a_model(tmp_path):
    full = [NamedMpkGzFileRecorder, BinFileRecorder, BinGzFileRecorder, PrettyJsonFileRecorder]
    for recorder in [*(r(FullPrecisionSettings()) for r in full), JsonGzFileRecorder()]:
        path = net(0).save_file(tmp_path / type(recorder).__name__, recorder)
        loaded = net(1).load_file(path, recorder, "cpu")
        assert same_params(loaded, net(0)), type(recorder).__name__
    # Burn's SensitiveCompactRecorder: half precision, so values round to float16.
    path = net(0).save_file(tmp_path / "sensitive", SensitiveCompactRecorder())
    loaded = net(1).load_file(path, SensitiveCompactRecorder(), "cpu")
    assert same_params(loaded, net(0), atol=1e-3) and not same_params(loaded, net(0))


@row("HalfPrecisionSettings, FullPrecisionSettings, DoublePrecisionSettings")
def test_precision_settings_set_the_stored_precision(tmp_path):
    model = net(0)
    with torch.no_grad():
        model.linear1.weight[0, 0] = 1 / 3
    loaded = {}
    for settings in (HalfPrecisionSettings(), FullPrecisionSettings(), DoublePrecisionSettings()):
        recorder = NamedMpkFileRecorder(settings)
        path = model.save_file(tmp_path / type(settings).__name__, recorder)
        target = net(1).load_file(path, recorder, "cpu")
        assert target.linear1.weight.dtype == torch.float32  # any precision loads into f32
        loaded[type(settings).__name__] = target.linear1.weight[0, 0].item()
    assert loaded["HalfPrecisionSettings"] == torch.tensor(1 / 3, dtype=torch.float16).item()
    assert loaded["FullPrecisionSettings"] == loaded["DoublePrecisionSettings"]
    assert loaded["FullPrecisionSettings"] == torch.tensor(1 / 3).item()


@row(
    "BurnpackStore::from_file(path), SafetensorsStore::from_file(path), "
    "PytorchStore::from_file(path)"
)
def test_stores_round_trip_a_model(tmp_path):
    for store_type, name in (
        (BurnpackStore, "model.bpk"),
        (SafetensorsStore, "model.safetensors"),
    ):
        result = net(0).save_into(store_type.from_file(tmp_path / name))
        target = net(1)
        applied = target.load_from(store_type.from_file(tmp_path / name))
        assert same_params(target, net(0)), name
        assert not applied.errors and not applied.missing and len(applied.applied) == 6
        assert result is None or not getattr(result, "errors", None)
    torch.save(net(0).state_dict(), tmp_path / "model.pt")  # a PyTorch file, written by torch
    target = net(1)
    target.load_from(PytorchStore.from_file(tmp_path / "model.pt"))
    assert same_params(target, net(0))


@row(
    ".with_regex(..), .with_full_path(..), .with_predicate(..), .with_key_remapping(from, to), "
    ".allow_partial(true), .validate(..), .overwrite(..), .metadata(k, v)"
)
def test_store_options(tmp_path):
    path = tmp_path / "linear1.bpk"
    store = BurnpackStore.from_file(path).with_regex(r"^linear1\.").metadata("run", "42")
    net(0).save_into(store)
    reader = BurnpackStore.from_file(path)
    assert sorted(reader.keys()) == ["linear1.bias", "linear1.weight"]  # only what matched
    assert reader.get_snapshot("linear1.bias") is not None
    assert reader.reader().metadata.get("run") == "42"
    target = net(1)
    with pytest.raises(Exception, match="lacks 4 tensor"):
        target.load_from(BurnpackStore.from_file(path))  # linear2 and norm are missing
    result = target.load_from(BurnpackStore.from_file(path).allow_partial(True))
    assert torch.equal(target.linear1.weight, net(0).linear1.weight)
    assert "linear2.weight" in [name for name, _ in result.missing]  # (path, container)
    with pytest.raises(Exception, match=r"(?i)exist|overwrite"):
        net(0).save_into(BurnpackStore.from_file(path).overwrite(False))
    net(2).save_into(BurnpackStore.from_file(tmp_path / "one.bpk").with_full_path("linear2.weight"))
    assert list(BurnpackStore.from_file(tmp_path / "one.bpk").keys()) == ["linear2.weight"]
    # Burnpack remaps the names it reads, as Burn's (burn-store/src/burnpack.rs: "during loading").
    renamed = BurnpackStore.from_file(tmp_path / "one.bpk").with_key_remapping(
        r"^linear2\.", "head."
    )
    assert list(renamed.keys()) == ["head.weight"]
    some = net(3)
    some.load_from(
        BurnpackStore.from_file(path)
        .with_predicate(lambda key, container: key.endswith("bias"))
        .allow_partial(True)
        .validate(True)
    )
    assert torch.equal(some.linear1.bias, net(0).linear1.bias)
    assert not torch.equal(some.linear1.weight, net(0).linear1.weight)


@row("PyTorchToBurnAdapter, BurnToPyTorchAdapter")
def test_adapters_write_burns_layout_and_read_it_back(tmp_path):
    path = tmp_path / "burn.bpk"
    net(0).save_into(BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    stored = BurnpackStore.from_file(path)
    keys = set(stored.keys())
    # Burn's Linear weight is [d_input, d_output]; its LayerNorm parameters are gamma/beta.
    assert tuple(stored.get_snapshot("linear1.weight").shape) == (3, 4)
    assert {"norm.gamma", "norm.beta"} <= keys and "norm.weight" not in keys
    target = net(1)
    target.load_from(BurnpackStore.from_file(path).with_from_adapter(BurnToPyTorchAdapter()))
    assert same_params(target, net(0))


@row(".map_indices_contiguous(true), .skip_enum_variants(true) (Pytorch/Safetensors stores)")
def test_contiguous_indices_load_a_sequential_with_gaps(tmp_path):
    bn.seed(0)
    source = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))  # keys 0.*, 2.*
    torch.save(source.state_dict(), tmp_path / "mlp.pt")
    gapless = nn.ModuleList([nn.Linear(3, 4), nn.Linear(4, 2)])  # keys 0.*, 1.* (Burn's Vec)
    store = PytorchStore.from_file(tmp_path / "mlp.pt").map_indices_contiguous(True)
    bn.load_from(gapless, store.skip_enum_variants(True))
    assert torch.equal(gapless[1].weight, source[2].weight)
    with pytest.raises(Exception, match="lacks"):  # off by default: the gap stays
        bn.load_from(
            nn.ModuleList([nn.Linear(3, 4), nn.Linear(4, 2)]),
            PytorchStore.from_file(tmp_path / "mlp.pt"),
        )

"""Burn main's `ModuleRecord` (burn-core `store/mod.rs`), in Burn's idiom (issue 39, item 10):
`model.into_record().save(path)`, `ModuleRecord::load(path)`, `model.load_record(record)`,
`with_dtype_policy(DTypePolicy::FromRecord)`, `allow_partial`, `allow_unused`; and the record
still reads as the module's state_dict."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.record.store import BurnpackStore, DTypePolicy, ModuleRecord, load_from
from burnish.record.store.burnpack import PackReader

BURN_MNIST = Path(__file__).with_name("data") / "burn_mnist_model.bpk"


class Model(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)  # square: a transposed load would not fail
        self.norm = nn.BatchNorm1d(4)


def _trained() -> Model:
    model = Model()
    with torch.no_grad():
        for tensor in model.state_dict().values():
            tensor.copy_(torch.randn_like(tensor.float()).to(tensor.dtype) + 3)
    return model


def test_burns_save_idiom_writes_a_file_burn_loads(tmp_path):
    model = _trained()
    path = model.into_record().save(tmp_path / "model")  # result.model.into_record().save(path)
    assert path == tmp_path / "model.bpk"
    reader = PackReader.from_file(path)
    assert sorted(reader.names()) == ["fc.bias", "fc.weight", "norm.beta", "norm.gamma",
                                      "norm.running_mean", "norm.running_var"]  # fmt: skip
    assert torch.equal(reader.tensor("fc.weight"), model.fc.weight.detach().t())  # [in, out]
    assert all(d.param_id is not None for d in reader.descriptors.values())
    loaded = Model().load_record(ModuleRecord.load(path))  # Burn: model.load_record(record)
    assert torch.equal(loaded.fc.weight, model.fc.weight)
    assert torch.equal(loaded.norm.weight, model.norm.weight)
    again = Model()
    load_from(again, BurnpackStore.from_file(path))  # the store reads it the same way
    assert torch.equal(again.fc.weight, model.fc.weight)


def test_the_record_is_still_the_state_dict():
    model = _trained()
    record = model.into_record()
    assert isinstance(record, dict) and list(record) == list(model.state_dict())
    assert record.len() == 7 and not record.is_empty()
    target = Model()
    target.load_state_dict(record)
    assert torch.equal(target.norm.num_batches_tracked, model.norm.num_batches_tracked)
    assert torch.equal(bn.load_record(Model(), dict(record)).fc.bias, model.fc.bias)


def test_bytes_round_trip_and_param_ids_follow_the_tensors():
    model = _trained()
    data = model.into_record().into_bytes()
    record = ModuleRecord.from_bytes(data)
    loaded = Model().load_record(record)
    assert torch.equal(loaded.fc.weight, model.fc.weight)
    first = PackReader.from_buffer(bytearray(data)).descriptors
    second = PackReader.from_buffer(bytearray(loaded.into_record().into_bytes())).descriptors
    assert {n: d.param_id for n, d in first.items()} == {n: d.param_id for n, d in second.items()}


def test_burns_own_file_loads_through_the_record():
    from tests.record.store.test_layout import BurnMnist

    record = ModuleRecord.load(BURN_MNIST)
    model = BurnMnist()
    bn.load_record(model, record)
    reader = PackReader.from_file(BURN_MNIST)
    assert torch.equal(model.fc2.weight, reader.tensor("fc2.weight").t())


def test_dtype_policy_from_record_and_cast_to_module(tmp_path):
    source = _trained().double()
    path = source.into_record().save(tmp_path / "f64.bpk")
    cast = Model().load_record(ModuleRecord.load(path))  # burnish's default: CastToModule
    assert cast.fc.weight.dtype == torch.float32
    kept = Model().load_record(ModuleRecord.load(path).with_dtype_policy(DTypePolicy.FromRecord))
    assert kept.fc.weight.dtype == torch.float64 and torch.equal(kept.fc.weight, source.fc.weight)
    with pytest.raises(TypeError, match=r"DTypePolicy.FromRecord or DTypePolicy.CastToModule; "
                       r"received 'f64'"):  # fmt: skip
        ModuleRecord().with_dtype_policy("f64")  # type: ignore[arg-type]


def test_partial_and_unused_are_refused_unless_allowed():
    record = _trained().into_record()
    del record["fc.bias"]
    record["extra.weight"] = torch.ones(1)
    with pytest.raises(RecordError, match=r"(?s)missing key `fc.bias`.*unexpected key `extra"):
        Model().load_record(record)
    model = Model().load_record(record.allow_partial().allow_unused())
    assert torch.equal(model.fc.weight, record["fc.weight"])

"""`BurnpackFileRecorder` applies the stores' layout rule (issue 39, item 2): Burn's own file
through the recorder path, `model.load_file(path, BurnpackFileRecorder())` (the port of Burn
main's `model.load_file(path)`), loads as `load_from(model, BurnpackStore.from_file(path))`
does; burnish's own recorder files stay plain state_dicts."""

from __future__ import annotations

import pytest
import torch

import burnish as bn
from burnish.errors import RecordError
from burnish.record import BurnpackFileRecorder
from burnish.record.store import BurnpackStore, ModuleRecord, load_from
from burnish.record.store.burnpack import PackReader
from burnish.record.store.recorder import BURN_LAYOUT_RECORD

from tests.record.store.test_layout import (
    BURN_MNIST,
    BurnMnist,
    Square,
    _burn_tensors,
    _random,
    _write,
)


class Mnist(BurnMnist, bn.Module):
    """Burn's MNIST example model with Burn's `Module` methods."""


class BnSquare(Square, bn.Module):
    """A square Linear and a BatchNorm, with Burn's `Module` methods."""


def test_burns_idiom_load_file_reads_burns_own_file():
    # Burn main: `let model = model.load_file("model.bpk");`
    model = Mnist().load_file(BURN_MNIST, BurnpackFileRecorder())
    expected = BurnMnist()
    load_from(expected, BurnpackStore.from_file(BURN_MNIST))
    for name, tensor in expected.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name
    reader = PackReader.from_file(BURN_MNIST)
    assert torch.equal(model.fc2.weight, reader.tensor("fc2.weight").t())  # square 128x128
    assert torch.equal(model.conv1.norm.weight, reader.tensor("conv1.norm.gamma"))
    assert model.conv1.norm.num_batches_tracked.item() == 0  # Burn has none: PyTorch's stays


def test_the_recorder_gives_burns_file_as_a_module_record_in_burns_layout():
    record = BurnpackFileRecorder().load(BURN_MNIST)
    assert isinstance(record, ModuleRecord) and record.layout == "burn"
    assert "conv1.norm.gamma" in record  # still the file's tensors, read as a dict
    assert BurnpackFileRecorder().load_metadata(BURN_MNIST).record_type == BURN_LAYOUT_RECORD


def test_a_file_burns_store_wrote_loads_through_the_recorder(tmp_path):
    tensors, weight = _burn_tensors(ids=False)
    path = tmp_path / "burn.bpk"
    _write(path, tensors, {"format": "burnpack", "producer": "burn", "version": "0.22.0"})
    model = BnSquare().load_file(path, BurnpackFileRecorder())
    assert torch.equal(model.fc.weight, weight.t())
    assert torch.equal(model.norm.weight, torch.full((4,), 2.0))


def test_burnishs_file_for_burn_loads_through_the_recorder(tmp_path):
    source = _random(BnSquare())
    path = source.into_record().save(tmp_path / "for_burn")
    model = BnSquare().load_file(path, BurnpackFileRecorder())
    assert torch.equal(model.fc.weight, source.fc.weight)
    assert torch.equal(model.norm.weight, source.norm.weight)


def test_a_file_that_does_not_say_is_refused_through_the_recorder(tmp_path):
    tensors, _ = _burn_tensors(ids=False)
    path = tmp_path / "unknown.bpk"
    _write(path, tensors)
    with pytest.raises(RecordError, match=r"does not say whose layout.*'fc.weight'"):
        BnSquare().load_file(path, BurnpackFileRecorder())


def test_burnishs_recorder_file_stays_a_plain_state_dict(tmp_path):
    source = _random(BnSquare())
    path = source.save_file(tmp_path / "model", BurnpackFileRecorder())
    record = BurnpackFileRecorder().load(path)
    assert type(record) is dict
    model = BnSquare().load_file(path, BurnpackFileRecorder())
    assert torch.equal(model.fc.weight, source.fc.weight)
    assert torch.equal(model.norm.num_batches_tracked, source.norm.num_batches_tracked)


def test_a_converted_burn_file_keeps_its_layout(tmp_path):
    # What `burnish convert model.bpk out --to burnpack` does: load, record with its type.
    recorder = BurnpackFileRecorder()
    record_type = recorder.load_metadata(BURN_MNIST).record_type
    path = recorder.record(recorder.load(BURN_MNIST), tmp_path / "copy", record_type=record_type)
    assert PackReader.from_file(path).metadata["burnish.layout"] == "burn"
    expected = Mnist().load_file(BURN_MNIST, recorder)
    through_store = BurnMnist()
    load_from(through_store, BurnpackStore.from_file(path))
    for model in (Mnist().load_file(path, recorder), through_store):
        assert torch.equal(model.fc2.weight, expected.fc2.weight)
        assert torch.equal(model.conv2.norm.bias, expected.conv2.norm.bias)

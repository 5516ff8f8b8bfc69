"""bn.Module and the module functions: valid twin, records, files, dtypes, strict errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.record import (
    BinFileRecorder,
    CompactRecorder,
    DefaultRecorder,
    JsonGzFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    RecordError,
    SafetensorsFileRecorder,
)

from tests.helpers import assert_close, tiny_model


class Net(bn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.norm = nn.BatchNorm2d(2)
        self.head = nn.Linear(2, 3)
        self.register_buffer("mask", torch.tensor([True, False, True]))
        self.register_buffer("counts", torch.tensor([1, 2, 3], dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.norm(self.conv(x)).mean(dim=(2, 3))
        return torch.nn.functional.dropout(self.head(x), 0.5, self.training)


def trained_net() -> Net:
    bn.seed(1)
    net = Net()
    net(torch.randn(4, 1, 5, 5))  # moves the BatchNorm running stats
    with torch.no_grad():
        net.counts += 40000  # does not fit int16
    return net


def test_valid_is_an_inference_twin_sharing_storage():
    net = trained_net()
    twin = net.valid()
    assert isinstance(twin, Net) and net.training and not twin.training
    assert all(not m.training for m in twin.modules())
    assert all(not p.requires_grad for p in twin.parameters())
    assert all(p.requires_grad for p in net.parameters())
    x = torch.randn(2, 1, 5, 5)
    out = twin(x)
    assert not out.requires_grad and torch.equal(out, twin(x))  # eval: no dropout
    with torch.no_grad():  # an optimizer-style in-place update
        net.head.weight.add_(1.0)
        net.norm.running_mean.fill_(0.5)
    assert torch.equal(twin.head.weight, net.head.weight)
    assert torch.equal(twin.norm.running_mean, torch.full((2,), 0.5))
    assert twin.head.weight.data_ptr() == net.head.weight.data_ptr()
    assert bn.valid(net.head).weight.data_ptr() == net.head.weight.data_ptr()


def test_valid_keeps_tied_parameters_tied():
    model = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    model[1].weight = model[0].weight
    twin = bn.valid(model)
    assert twin[0].weight is twin[1].weight
    assert bn.num_params(model) == 9 + 3 + 3


def test_num_params_and_devices():
    net = Net()
    assert net.num_params() == (2 * 9 + 2) + (2 + 2) + (2 * 3 + 3)
    assert net.to_device("cpu") is net
    copy = net.fork("cpu")
    assert copy is not net and copy.head.weight.data_ptr() != net.head.weight.data_ptr()
    assert torch.equal(copy.head.weight, net.head.weight)


RECORDERS = [CompactRecorder(), DefaultRecorder(), NamedMpkGzFileRecorder(), BinFileRecorder(),
             PrettyJsonFileRecorder(), JsonGzFileRecorder(), SafetensorsFileRecorder()]  # fmt: skip


@pytest.mark.parametrize("recorder", RECORDERS, ids=lambda r: type(r).__name__)
def test_save_and_load_file_round_trips_buffers(tmp_path, recorder):
    net = trained_net()
    path = net.save_file(tmp_path / "net", recorder)
    assert path.name == f"net.{recorder.file_extension}"
    assert recorder.load_metadata(path).record_type == f"module:{__name__}.Net"
    loaded = Net().load_file(path, recorder, "cpu")
    half = recorder.settings.float_dtype == torch.float16
    expected = net.into_record()
    assert_close(loaded.into_record(), expected, atol=1e-2 if half else 1e-7, rtol=1e-2)
    assert torch.equal(loaded.counts, net.counts) and loaded.counts.dtype == torch.int64
    assert torch.equal(loaded.mask, net.mask)
    assert int(loaded.norm.num_batches_tracked) == 1


def test_any_precision_loads_into_any_model_dtype(tmp_path):
    net = trained_net()
    path = net.save_file(tmp_path / "half", CompactRecorder())
    as_double = Net().double()
    bn.load_file(as_double, path, CompactRecorder())
    assert as_double.head.weight.dtype == torch.float64
    assert_close(as_double.head.weight.float(), net.head.weight, atol=1e-2, rtol=1e-2)
    back = bn.save_file(as_double, tmp_path / "double", DefaultRecorder())
    as_bf16 = Net().to(torch.bfloat16).load_file(back, DefaultRecorder())
    assert as_bf16.head.weight.dtype == torch.bfloat16


def test_plain_modules_use_the_functions(tmp_path):
    model = tiny_model(seed=3)
    path = bn.save_file(model, tmp_path / "tiny", BinFileRecorder())
    other = bn.load_file(tiny_model(seed=4), path, BinFileRecorder(), device="cpu")
    assert_close(bn.into_record(other), bn.into_record(model))
    assert bn.load_record(tiny_model(seed=5), bn.into_record(model)) is not None
    assert bn.save_file(model, tmp_path / "default").suffix == ".mpk"


def test_nested_records_load_like_state_dicts():
    model = tiny_model(seed=3)
    nested = {"0": {"weight": model[0].weight, "bias": model[0].bias},
              "2": {"weight": model[2].weight, "bias": model[2].bias}}  # fmt: skip
    loaded = bn.load_record(tiny_model(seed=7), nested)
    assert_close(bn.into_record(loaded), bn.into_record(model))


def test_mismatches_name_key_actual_and_expected():
    record = bn.into_record(tiny_model())
    record["0.weight"] = torch.zeros(5, 4)
    record["0.bais"] = record.pop("0.bias")
    record["2.bias"] = record["2.bias"].long()
    with pytest.raises(RecordError) as info:
        bn.load_record(tiny_model(), record)
    message = str(info.value)
    assert "missing key `0.bias`: expected float32 tensor of shape [8]" in message
    assert "unexpected key `0.bais`" in message and "did you mean `0.bias`" in message
    assert "key `0.weight`: shape [5, 4] in the record, expected [8, 4]" in message
    assert "key `2.bias`: dtype torch.int64 (int) in the record, expected torch.float32" in message
    assert "4 problems" in message


def test_strict_false_loads_the_rest_and_reports_it():
    source = tiny_model(seed=1)
    record = bn.into_record(source)
    del record["2.bias"]
    record["extra"] = torch.ones(1)
    target = tiny_model(seed=2)
    before = target[2].bias.clone()
    with pytest.warns(UserWarning, match=r"skipped 2 entries.*missing key `2.bias`.*`extra`"):
        bn.load_record(target, record, strict=False)
    assert torch.equal(target[0].weight, source[0].weight)
    assert torch.equal(target[2].bias, before)


def test_loading_a_file_into_the_wrong_module_names_the_file(tmp_path):
    path = bn.save_file(tiny_model(), tmp_path / "tiny", CompactRecorder())
    with pytest.raises(RecordError, match=r"(?s)Cannot load .*tiny.* into the module.*missing key"):
        Net().load_file(path, CompactRecorder())


def test_loading_keeps_parameter_identity():
    model = tiny_model(seed=1)
    weight = model[0].weight
    bn.load_record(model, bn.into_record(tiny_model(seed=2)))
    assert model[0].weight is weight and weight.requires_grad


def test_top_level_names_come_from_module():
    import burnish.module as module

    for name in ("Module", "valid", "num_params", "save_file", "load_file", "into_record",
                 "load_record"):  # fmt: skip
        assert getattr(bn, name) is getattr(module, name)


def test_load_file_keeps_the_mode_and_valid_is_the_inference_twin(tmp_path):
    """Decided: `load_file` does not switch to eval mode (a module is loaded to resume
    training too, and `load_state_dict` keeps the mode); inference calls `.valid()`, as the
    docs say where inference is shown (Burn's inference backend has no dropout)."""
    from burnish.record import CompactRecorder

    class WithDropout(bn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 64)
            self.dropout = nn.Dropout(0.5)

        def forward(self, x):
            return self.dropout(self.linear(x))

    bn.seed(0)
    WithDropout().save_file(tmp_path / "m", CompactRecorder())
    x = torch.ones(2, 4)
    loaded = WithDropout().load_file(tmp_path / "m", CompactRecorder())
    assert loaded.training and not torch.equal(loaded(x), loaded(x))  # dropout is on
    twin = loaded.valid()
    assert not twin.training and torch.equal(twin(x), twin(x))
    assert loaded.training  # the twin leaves the loaded module's mode alone
    loaded.eval()
    assert not loaded.load_file(tmp_path / "m", CompactRecorder()).training

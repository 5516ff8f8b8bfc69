"""Interop: import PyTorch and foreign safetensors files with key remapping; export safetensors."""

from __future__ import annotations

import pytest
import safetensors.torch
import torch
from torch import nn

import burnish as bn
from burnish.record import (
    HalfPrecisionSettings,
    LoadArgs,
    PyTorchFileRecorder,
    RecordError,
    SafetensorsFileRecorder,
)

from tests.helpers import assert_close, tiny_model


def test_safetensors_export_is_read_by_safetensors_itself(tmp_path):
    model = tiny_model(seed=2)
    path = bn.save_file(model, tmp_path / "model", SafetensorsFileRecorder())
    assert_close(safetensors.torch.load_file(path), model.state_dict(), atol=0, rtol=0)
    with safetensors.safe_open(path, framework="pt") as file:
        assert file.metadata()["format"] == "pt"


def test_half_safetensors_export_stores_float16(tmp_path):
    model = tiny_model(seed=2)
    path = bn.save_file(model, tmp_path / "m", SafetensorsFileRecorder(HalfPrecisionSettings))
    tensors = safetensors.torch.load_file(path)
    assert tensors["0.weight"].dtype == torch.float16
    loaded = bn.load_file(tiny_model(seed=3), path, SafetensorsFileRecorder())
    assert loaded[0].weight.dtype == torch.float32
    assert_close(loaded[0].weight, model[0].weight, atol=1e-3, rtol=1e-3)


def test_foreign_safetensors_with_key_remap(tmp_path):
    model = tiny_model(seed=4)
    foreign = {f"encoder.layers.{k}": v.double() for k, v in model.state_dict().items()}
    safetensors.torch.save_file(foreign, tmp_path / "hf.safetensors")
    args = LoadArgs(tmp_path / "hf.safetensors").with_key_remap(r"^encoder\.layers\.", "")
    record = SafetensorsFileRecorder().load(args)
    assert set(record) == set(model.state_dict())
    loaded = bn.load_record(tiny_model(seed=5), record)
    assert loaded[0].weight.dtype == torch.float32
    assert_close(bn.into_record(loaded), bn.into_record(model))


def test_pytorch_state_dict_import_with_top_level_key_and_rust_style_groups(tmp_path):
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    model(torch.randn(4, 2))
    renamed = {k.replace("0.", "fc.").replace("1.", "bn."): v for k, v in
               model.state_dict().items()}  # fmt: skip
    torch.save({"epoch": 3, "state_dict": renamed}, tmp_path / "ckpt.pth")
    args = (
        LoadArgs(tmp_path / "ckpt.pth")
        .with_top_level_key("state_dict")
        .with_key_remap(r"^fc\.(.*)", r"0.\1")
        .with_key_remap(r"^bn\.(.*)", "1.$1")
    )
    record = PyTorchFileRecorder().load(args)
    target = bn.load_record(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)), record)
    assert_close(target.state_dict(), model.state_dict())


def test_pytorch_import_errors_are_clear(tmp_path):
    torch.save({"a": torch.ones(1)}, tmp_path / "x.pt")
    with pytest.raises(RecordError, match=r"Top-level key 'model' is not in .*found: \['a'\]"):
        PyTorchFileRecorder().load(LoadArgs(tmp_path / "x.pt").with_top_level_key("model"))
    with pytest.raises(RecordError, match="only imports files"):
        PyTorchFileRecorder().record({"a": torch.ones(1)}, tmp_path / "y")
    remap = LoadArgs(tmp_path / "x.pt").with_key_remap("a", "b").with_key_remap("^.*$", "c")
    assert list(PyTorchFileRecorder().load(remap)) == ["c"]
    with pytest.raises(RecordError, match="not a valid regular expression"):
        LoadArgs(tmp_path / "x.pt").with_key_remap("(", "")


def test_remap_collisions_are_refused(tmp_path):
    torch.save({"a.w": torch.ones(1), "b.w": torch.ones(1)}, tmp_path / "x.pt")
    with pytest.raises(RecordError, match=r"renames both `a.w` and `b.w` to `w`"):
        PyTorchFileRecorder().load(LoadArgs(tmp_path / "x.pt").with_key_remap(r"^\w\.", ""))

"""`burnish inspect` and `burnish convert` know Burnpack (`.bpk`): burnish's checkpoints,
`BurnpackStore` files, and files Burn wrote."""

from __future__ import annotations

import safetensors.torch
import torch

from burnish.record import (
    BurnpackFileRecorder,
    BurnpackStore,
    DefaultRecorder,
    SafetensorsStore,
    recorder_for_file,
    save_into,
)

from tests.cli.helpers import burnish


def test_inspect_a_store_file_with_its_metadata(tmp_path):
    path = tmp_path / "model.bpk"
    save_into(torch.nn.Linear(3, 2), BurnpackStore.from_file(path).metadata("note", "hi"))
    result = burnish("inspect", path)
    assert result.returncode == 0, result.stderr
    assert "Format: burnpack (Burnpack written by Burn or BurnpackStore)" in result.stdout
    assert "File metadata: format=burnpack, note=hi, producer=burnish, version=" in result.stdout
    assert "| weight | [2, 3] | float32" in result.stdout


def test_inspect_tells_a_safetensors_store_file_from_another_tools(tmp_path):
    ours, theirs = tmp_path / "ours.safetensors", tmp_path / "theirs.safetensors"
    save_into(torch.nn.Linear(3, 2), SafetensorsStore.from_file(ours))
    safetensors.torch.save_file({"w": torch.ones(2)}, theirs, metadata={"who": "hf"})
    result = burnish("inspect", ours)
    assert "Format: foreign (safetensors written by burnish's SafetensorsStore)" in result.stdout
    assert "File metadata: format=safetensors, producer=burnish, version=" in result.stdout
    result = burnish("inspect", theirs)
    assert "Format: foreign (safetensors written by another tool)" in result.stdout
    assert "File metadata: who=hf" in result.stdout


def test_convert_to_burnpack_and_back(tmp_path):
    record = {"w": torch.arange(6.0).reshape(2, 3), "step": 7, "nested": {"b": torch.ones(2)}}
    source = DefaultRecorder().record(record, tmp_path / "in")
    result = burnish("convert", source, tmp_path / "out", "--to", "burnpack")
    assert result.returncode == 0, result.stderr
    target = tmp_path / "out.bpk"
    assert f"to {target} (burnish.burnpack, FullPrecisionSettings" in result.stdout
    assert isinstance(recorder_for_file(target), BurnpackFileRecorder)
    loaded = BurnpackFileRecorder().load(target)
    assert loaded["step"] == 7 and torch.equal(loaded["w"], record["w"])
    result = burnish("inspect", target)
    assert result.returncode == 0 and "Format: burnish.burnpack (Burnpack)" in result.stdout
    back = burnish("convert", target, tmp_path / "back", "--to", "default")
    assert back.returncode == 0, back.stderr
    assert torch.equal(DefaultRecorder().load(tmp_path / "back.mpk")["nested"]["b"], torch.ones(2))

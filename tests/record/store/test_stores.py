"""The stores on real files: round trips, builder methods (filters, remapping, partial loading,
validation, overwrite, metadata), the apply result, ParamId persistence, and interop with the
safetensors library and torch.save."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import burnish as bn
from burnish.errors import RecordError
from burnish.record import (
    BurnpackStore,
    KeyRemapper,
    PathFilter,
    PytorchStore,
    SafetensorsStore,
    load_from,
    save_into,
)
from burnish.record.store.burnpack import PackReader


class Model(bn.Module):
    def __init__(self, hidden: int = 4) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, hidden), nn.LayerNorm(hidden))
        self.head = nn.Linear(hidden, 2)


def same(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_burnpack_round_trip_with_auto_extension(tmp_path):
    model = Model()
    model.save_into(BurnpackStore.from_file(tmp_path / "model"))
    assert (tmp_path / "model.bpk").is_file()
    loaded = Model()
    result = loaded.load_from(BurnpackStore.from_file(tmp_path / "model"))
    assert same(model, loaded)
    assert result.applied == list(model.state_dict())
    assert (result.skipped, result.missing, result.unused, result.errors) == ([], [], [], [])
    assert result.is_success()


def test_auto_extension_can_be_disabled(tmp_path):
    save_into(Model(), BurnpackStore.from_file(tmp_path / "model").auto_extension(False))
    assert (tmp_path / "model").is_file() and not (tmp_path / "model.bpk").exists()


def test_saving_over_a_file_needs_overwrite(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(), BurnpackStore.from_file(path))
    before = path.read_bytes()
    with pytest.raises(RecordError, match=r"File already exists: .*m\.bpk.*overwrite\(True\)"):
        save_into(Model(), BurnpackStore.from_file(path))
    assert path.read_bytes() == before
    save_into(Model(), BurnpackStore.from_file(path).overwrite(True))
    assert path.read_bytes() != before


def test_metadata_defaults_and_additions(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(), BurnpackStore.from_file(path).metadata("epochs", "100"))
    metadata = PackReader.from_file(path).metadata
    assert metadata["format"] == "burnpack" and metadata["producer"] == "burnish"
    assert metadata["epochs"] == "100" and metadata["version"] == bn.__version__
    save_into(Model(), BurnpackStore.from_file(path).overwrite().clear_metadata())
    # the layout stays: without it, a file with ids and no metadata reads as Burn's
    assert PackReader.from_file(path).metadata == {"burnish.layout": "pytorch"}


def test_param_ids_persist_through_a_load(tmp_path):
    first, second = tmp_path / "1.bpk", tmp_path / "2.bpk"
    save_into(Model(), BurnpackStore.from_file(first))
    loaded = Model()
    load_from(loaded, BurnpackStore.from_file(first))
    save_into(loaded, BurnpackStore.from_file(second))
    ids = {n: d.param_id for n, d in PackReader.from_file(first).descriptors.items()}
    assert all(isinstance(i, int) for i in ids.values()) and len(set(ids.values())) == len(ids)
    assert {n: d.param_id for n, d in PackReader.from_file(second).descriptors.items()} == ids


def test_partial_loading_and_the_apply_result(tmp_path):
    path = tmp_path / "m.bpk"
    small = Model()
    save_into(small.encoder, BurnpackStore.from_file(path))  # a file of the encoder alone
    store = BurnpackStore.from_file(path).with_key_remapping(r"^", "encoder.")
    model = Model()
    with pytest.raises(RecordError, match=r"(?s)lacks 2 tensor.*head.weight.*allow_partial"):
        load_from(model, store)
    result = load_from(
        model,
        BurnpackStore.from_file(path).with_key_remapping(r"^", "encoder.").allow_partial(True),
    )
    assert result.missing == [
        ("head.weight", "Struct:Model.Struct:Linear"),
        ("head.bias", "Struct:Model.Struct:Linear"),
    ]
    assert len(result.applied) == 4 and result.unused == []
    assert torch.equal(model.encoder[0].weight, small.encoder[0].weight)
    assert "2 missing" in str(result)


def test_unused_tensors_are_listed(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(), BurnpackStore.from_file(path))
    result = load_from(
        Model().encoder, BurnpackStore.from_file(path).with_key_remapping(r"^encoder\.", "")
    )
    assert result.unused == ["head.bias", "head.weight"]


def test_shape_mismatch_is_an_error_unless_validation_is_off(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(hidden=4), BurnpackStore.from_file(path))
    with pytest.raises(
        RecordError,
        match=r"Shape mismatch for 'encoder.0.weight': expected "
        r"\[5, 3\], found \[4, 3\]",
    ):
        load_from(Model(hidden=5), BurnpackStore.from_file(path))
    target = Model(hidden=5)
    before = target.encoder[0].weight.clone()
    result = load_from(target, BurnpackStore.from_file(path).validate(False))
    assert {e.kind for e in result.errors} == {"ShapeMismatch"}
    assert torch.equal(target.encoder[0].weight, before)


def test_dtype_kind_mismatch_is_an_error(tmp_path):
    path = tmp_path / "m.bpk"
    source = nn.Module()
    source.register_buffer("x", torch.arange(3))
    save_into(source, BurnpackStore.from_file(path))
    target = nn.Module()
    target.register_buffer("x", torch.zeros(3))
    with pytest.raises(RecordError, match=r"DType mismatch for 'x': expected torch.float32"):
        load_from(target, BurnpackStore.from_file(path))


def test_a_module_keeps_its_dtype_and_device(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(), BurnpackStore.from_file(path))
    half = Model().half()
    load_from(half, BurnpackStore.from_file(path))
    assert half.head.weight.dtype == torch.float16


def test_filters_on_save(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(
        Model(), BurnpackStore.from_file(path).with_regex(r"^encoder\.").with_full_path("head.bias")
    )
    assert PackReader.from_file(path).names() == [
        "encoder.0.bias",
        "encoder.0.weight",
        "encoder.1.bias",
        "encoder.1.weight",
        "head.bias",
    ]
    linear_only = tmp_path / "linear.bpk"
    save_into(
        Model(),
        BurnpackStore.from_file(linear_only).with_predicate(
            lambda path, containers: containers.endswith("Struct:Linear")
        ),
    )
    assert PackReader.from_file(linear_only).names() == [
        "encoder.0.bias",
        "encoder.0.weight",
        "head.bias",
        "head.weight",
    ]


def test_filters_on_load_skip(tmp_path):
    path = tmp_path / "m.bpk"
    source = Model()
    save_into(source, BurnpackStore.from_file(path))
    target = Model()
    head_before = target.head.weight.clone()
    result = load_from(
        target, BurnpackStore.from_file(path).filter(PathFilter().with_regex("^encoder"))
    )
    assert result.skipped == ["head.bias", "head.weight"]
    assert torch.equal(target.head.weight, head_before)
    assert torch.equal(target.encoder[0].weight, source.encoder[0].weight)


def test_key_remapping_with_groups(tmp_path):
    path = tmp_path / "m.safetensors"
    source = nn.Module()
    source.layers = nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)])
    save_into(source, SafetensorsStore.from_file(path))  # layers.0.weight, ...
    target = nn.Module()
    target.block0, target.block1 = nn.Linear(2, 2), nn.Linear(2, 2)
    store = SafetensorsStore.from_file(path).remap(
        KeyRemapper().add_pattern(r"^layers\.(\d+)\.", "block$1.")
    )
    assert store.keys() == ["block0.bias", "block0.weight", "block1.bias", "block1.weight"]
    load_from(target, store)
    assert torch.equal(target.block1.weight, source.layers[1].weight)


def test_remapping_two_names_onto_one_is_refused(tmp_path):
    path = tmp_path / "m.bpk"
    save_into(Model(), BurnpackStore.from_file(path))
    with pytest.raises(RecordError, match="maps two tensors to 'x'"):
        BurnpackStore.from_file(path).with_key_remapping("^.*", "x").keys()


@pytest.mark.parametrize(("written", "group"), [(r"trunk.\1", "1"), (r"trunk.\g<id>", "id")])
def test_pythons_group_syntax_in_a_replacement_is_refused_with_burns(written, group):
    with pytest.raises(RecordError, match=rf"uses Python's .*write `\$\{{{group}\}}`"):
        KeyRemapper().add_pattern(r"^body\.(?P<id>\d+)", written)


def test_safetensors_store_interop_with_the_library(tmp_path):
    from safetensors.torch import load_file, save_file

    model = Model()
    path = tmp_path / "m.safetensors"
    save_into(model, SafetensorsStore.from_file(path).metadata("note", "hi"))
    loaded = load_file(path)
    assert all(torch.equal(loaded[k], v) for k, v in model.state_dict().items())
    from safetensors import safe_open

    with safe_open(path, "pt") as file:
        assert file.metadata()["note"] == "hi"
    other = Model()
    save_file(other.state_dict(), tmp_path / "lib.safetensors")
    load_from(model, SafetensorsStore.from_file(tmp_path / "lib.safetensors"))
    assert same(model, other)


def test_bytes_stores_round_trip():
    model = Model()
    for store_type in (BurnpackStore, SafetensorsStore):
        store = store_type.from_bytes()
        save_into(model, store)
        loaded = Model()
        load_from(loaded, store_type.from_bytes(store.get_bytes()))
        assert same(model, loaded)


def test_pytorch_store_reads_state_dicts_and_is_read_only(tmp_path):
    model = Model()
    path = tmp_path / "ckpt.pt"
    torch.save({"state_dict": model.state_dict(), "epoch": 3}, path)
    loaded = Model()
    load_from(loaded, PytorchStore.from_file(path).with_top_level_key("state_dict"))
    assert same(model, loaded)
    with pytest.raises(RecordError, match=r"no top-level key 'model'.*'epoch', 'state_dict'"):
        load_from(loaded, PytorchStore.from_file(path).with_top_level_key("model"))
    with pytest.raises(RecordError, match="PytorchStore is read-only"):
        save_into(model, PytorchStore.from_file(tmp_path / "out.pt"))


def test_wrong_arguments_are_named():
    with pytest.raises(TypeError, match=r"takes an nn.Module first; received str"):
        save_into("model", BurnpackStore.from_bytes())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"takes a store .* received str"):
        load_from(Model(), "model.bpk")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="with_from_adapter` takes a ModuleAdapter"):
        BurnpackStore.from_bytes().with_from_adapter("burn")  # type: ignore[arg-type]
    with pytest.raises(RecordError, match="No Burnpack file at"):
        load_from(Model(), BurnpackStore.from_file("/nonexistent/model"))


def test_a_checkpoint_model_file_is_a_store_file(tmp_path):
    """`BurnpackFileRecorder` (the Learner's Burnpack checkpoints) writes module records that
    `BurnpackStore` loads, and reads what `save_into` wrote."""
    from burnish.record import BurnpackFileRecorder

    model = Model()
    path = bn.save_file(model, tmp_path / "model", BurnpackFileRecorder())
    loaded = Model()
    load_from(loaded, BurnpackStore.from_file(path))
    assert same(model, loaded)
    save_into(model, BurnpackStore.from_file(tmp_path / "store.bpk"))
    assert same(bn.load_file(Model(), tmp_path / "store.bpk", BurnpackFileRecorder()), model)

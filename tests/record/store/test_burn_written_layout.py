"""A file Burn's store wrote (`producer: burn`) is told by its tensors, in Burnpack as in
safetensors (issue 39): Burn's `BurnpackStore` and `SafetensorsStore` write `format`,
`producer: burn` and `version` (burn-store's `default_metadata`) whatever their to-adapter, so a
plain save (Burn's layout) and one through `with_to_adapter(BurnToPyTorchAdapter)` (PyTorch's)
carry the same metadata. One rule (`layout.load_adapter`) serves both formats.

"Burn's files" are written with the real writer code: burnish's collector (Burn's
`module.collect(filter, to_adapter)`: a burnish module is PyTorch's, so Burn's plain save is the
collect through `PyTorchToBurnAdapter`, and Burn's save "for PyTorch" the plain collect), the
Burnpack container writer (`encode_chunks`) or `safetensors.torch.save_file`, under exactly
Burn's metadata, with the `param_id` Burn's writer gives every tensor."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file
from torch import nn

from burnish.errors import RecordError
from burnish.record import BurnpackFileRecorder
from burnish.record.store import (
    BurnpackStore,
    BurnToPyTorchAdapter,
    IdentityAdapter,
    ModuleAdapter,
    ModuleRecord,
    PyTorchToBurnAdapter,
    SafetensorsStore,
)
from burnish.record.store.burnpack import PackReader, PackTensor, encode_chunks
from burnish.record.store.collector import collect
from burnish.record.store.recorder import BURN_WRITTEN_RECORD

from tests.record.store.test_safetensors_layout import Mixed, Square, _distinct

BURNPACK_METADATA = {"format": "burnpack", "producer": "burn", "version": "0.22.0"}
SAFETENSORS_METADATA = {"format": "safetensors", "producer": "burn", "version": "0.22.0"}


def _tensors(model: nn.Module, to_adapter: ModuleAdapter) -> dict[str, PackTensor]:
    """Burn's `module.collect(None, Some(to_adapter))`, as the writer's entries."""
    return {s.full_path: PackTensor(s.full_path, s.dtype, tuple(s.shape), s.param_id, s.data_fn)
            for s in collect(model, None, to_adapter)}  # fmt: skip


def burn_bpk(model: nn.Module, path: Path, to_adapter: ModuleAdapter) -> Path:
    """Burn: `model.save_into(&mut BurnpackStore::from_file(path).with_to_adapter(to_adapter))`."""
    tensors = list(_tensors(model, to_adapter).values())
    path.write_bytes(b"".join(bytes(c) for c in encode_chunks(tensors, BURNPACK_METADATA)))
    return path


def burn_safetensors(model: nn.Module, path: Path, to_adapter: ModuleAdapter) -> Path:
    """Burn: `model.save_into(&mut SafetensorsStore::from_file(path).with_to_adapter(..))`."""
    tensors = {n: t.data_fn().contiguous() for n, t in _tensors(model, to_adapter).items()}
    save_file(tensors, str(path), metadata=SAFETENSORS_METADATA)
    return path


Writer = Callable[[nn.Module, Path, ModuleAdapter], Path]
FORMATS: dict[str, tuple[Writer, Callable[[Path], object]]] = {
    "burnpack": (burn_bpk, BurnpackStore.from_file),
    "safetensors": (burn_safetensors, SafetensorsStore.from_file),
}
both_formats = pytest.mark.parametrize("fmt", list(FORMATS))


def _same(model: nn.Module, source: nn.Module) -> None:
    for name, tensor in source.state_dict().items():
        assert torch.equal(model.state_dict()[name], tensor), name


@both_formats
def test_burns_plain_save_loads_adapted(tmp_path, fmt):
    # Burn: `model.save_into(&mut BurnpackStore::from_file(p))`; burnish: `model.load_from(..)`.
    write, store = FORMATS[fmt]
    source = _distinct(Mixed())
    path = write(source, tmp_path / f"plain.{fmt}", PyTorchToBurnAdapter())
    model = Mixed()
    result = model.load_from(store(path))
    assert result.errors == [] and result.unused == [] and result.missing == []
    _same(model, source)
    assert not torch.equal(model.fc.weight, model.fc.weight.t())  # the square one, not a no-op


@both_formats
def test_burns_save_for_pytorch_loads_as_it_is(tmp_path, fmt):
    # Burn's book: `.with_to_adapter(BurnToPyTorchAdapter)` "for PyTorch", same metadata.
    write, store = FORMATS[fmt]
    source = _distinct(Mixed())
    path = write(source, tmp_path / f"for_pytorch.{fmt}", IdentityAdapter())
    if fmt == "burnpack":
        reader = PackReader.from_file(path)
        assert reader.metadata == BURNPACK_METADATA  # no burnish marker: Burn's own
        assert all(d.param_id is not None for d in reader.descriptors.values())
    model = Mixed()
    result = model.load_from(store(path))
    assert result.errors == [] and result.unused == [] and result.missing == []
    _same(model, source)


@both_formats
def test_a_burn_file_whose_tensors_do_not_tell_is_refused_until_the_adapter_says(tmp_path, fmt):
    write, store = FORMATS[fmt]
    source = _distinct(Square())
    path = write(source, tmp_path / f"square.{fmt}", PyTorchToBurnAdapter())
    refusal = r"by Burn \(`producer: burn`\).*Square's 'fc.weight' is a square Linear weight"
    with pytest.raises(RecordError, match=refusal):
        Square().load_from(store(path))
    burn = Square()
    burn.load_from(store(path).with_from_adapter(BurnToPyTorchAdapter()))
    assert torch.equal(burn.fc.weight, source.fc.weight)
    kept = Square()
    kept.load_from(store(path).with_from_adapter(IdentityAdapter()))
    assert torch.equal(kept.fc.weight, source.fc.weight.t())


@both_formats
def test_a_burn_file_holding_both_layouts_is_refused(tmp_path, fmt):
    write, store = FORMATS[fmt]
    source = _distinct(Mixed())
    source.head = _distinct(nn.Linear(3, 4))  # Burn's [in, out] of head is PyTorch's [out, in]
    path = write(source, tmp_path / f"both.{fmt}", PyTorchToBurnAdapter())
    with pytest.raises(RecordError, match=r"holds both layouts: 'norm.gamma' is Burn's, "
                       r"'head.weight' PyTorch's"):  # fmt: skip
        Mixed().load_from(store(path))


def test_burnishs_marker_is_still_followed_over_the_tensors(tmp_path):
    source = _distinct(Square())
    path = tmp_path / "marked.bpk"
    source.save_into(BurnpackStore.from_file(path).with_to_adapter(PyTorchToBurnAdapter()))
    assert PackReader.from_file(path).metadata["burnish.layout"] == "burn"
    model = Square()
    model.load_from(BurnpackStore.from_file(path))  # square, yet not refused: the file says
    assert torch.equal(model.fc.weight, source.fc.weight)


def test_burns_record_idioms_follow_the_same_rule(tmp_path):
    # Burn main: `model.load_record(ModuleRecord::load(p)?)` and `model.load_file(p)`.
    source = _distinct(Mixed())
    path = burn_bpk(source, tmp_path / "for_pytorch.bpk", IdentityAdapter())
    record = ModuleRecord.load(path)
    assert record.layout == "burn-written"
    _same(Mixed().load_record(record), source)
    _same(Mixed().load_file(path, BurnpackFileRecorder()), source)
    assert BurnpackFileRecorder().load_metadata(path).record_type == BURN_WRITTEN_RECORD
    square = burn_bpk(_distinct(Square()), tmp_path / "square.bpk", PyTorchToBurnAdapter())
    with pytest.raises(RecordError, match=r"Square's 'fc.weight' is a square Linear weight"):
        Square().load_file(square, BurnpackFileRecorder())


def test_a_record_of_burns_store_file_saves_and_converts_keeping_the_rule(tmp_path):
    source = _distinct(Mixed())
    path = burn_bpk(source, tmp_path / "plain.bpk", PyTorchToBurnAdapter())
    saved = ModuleRecord.load(path).save(tmp_path / "saved")
    assert "burnish.layout" not in PackReader.from_file(saved).metadata
    _same(Mixed().load_record(ModuleRecord.load(saved)), source)
    # What `burnish convert plain.bpk out --to burnpack` does: load, record with its type.
    recorder = BurnpackFileRecorder()
    kind = recorder.load_metadata(path).record_type
    copy = recorder.record(recorder.load(path), tmp_path / "copy", record_type=kind)
    assert PackReader.from_file(copy).metadata["producer"] == "burn"
    _same(Mixed().load_file(copy, recorder), source)
    through_store = Mixed()
    through_store.load_from(BurnpackStore.from_file(copy))
    _same(through_store, source)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    metadata=st.dictionaries(
        st.sampled_from(["burnish.layout", "producer", "format", ""]) | st.text(max_size=8),
        st.sampled_from(["burn", "pytorch", "", "BURN"]) | st.text(max_size=8),
        max_size=4,
    ),
    shape=st.sampled_from([(4, 4), (3, 4), (4, 3), (0, 4), (16,)]),
    value=st.sampled_from([0.0, float("nan"), float("inf"), -1e38, 1e-45]),
)
def test_any_burnpack_metadata_loads_or_is_refused_with_a_record_error(
    tmp_path, metadata, shape, value
):
    path = tmp_path / "any.bpk"
    tensors = [PackTensor.of("fc.weight", torch.full(shape, value)),
               PackTensor.of("fc.bias", torch.full((4,), value))]  # fmt: skip
    path.write_bytes(b"".join(bytes(c) for c in encode_chunks(tensors, metadata)))
    for load in (lambda: Square().load_from(BurnpackStore.from_file(path)),
                 lambda: Square().load_record(ModuleRecord.load(path))):  # fmt: skip
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                load()
        except RecordError as error:
            assert str(error)

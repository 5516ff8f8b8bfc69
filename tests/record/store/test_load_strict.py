"""`strict` means the same for every record kind (issue 39): a Burn-layout `ModuleRecord`
(Burn's file, read by `ModuleRecord.load` or `BurnpackFileRecorder`) loaded with `strict=False`
skips what does not fit and reports it in the warning a state_dict's `load_record` gives;
`strict=True` raises naming each missing and unused tensor.

Burn's files are written with the real writer code (burnish's collector through
`PyTorchToBurnAdapter`, the container writer) under exactly Burn's metadata: none for
`ModuleRecord::save` (a `param_id` on every tensor), `format`/`producer`/`version` for
`BurnpackStore`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from burnish.errors import RecordError
from burnish.record import BurnpackFileRecorder
from burnish.record.store import ModuleRecord, PyTorchToBurnAdapter
from burnish.record.store.burnpack import PackTensor, encode_chunks
from burnish.record.store.collector import collect

from tests.record.store.test_burn_written_layout import BURNPACK_METADATA, Mixed, _distinct

both_writers = pytest.mark.parametrize("metadata", [None, BURNPACK_METADATA],
                                       ids=["ModuleRecord::save", "BurnpackStore"])  # fmt: skip


class Other(Mixed):
    """Burn's model beside `Mixed`: no head bias (missing) and one more Linear (unused)."""

    def __init__(self) -> None:
        super().__init__()
        self.head = nn.Linear(4, 3, bias=False)
        self.extra = nn.Linear(2, 2)


def _burn_file(path: Path, metadata: dict[str, str] | None) -> tuple[Path, nn.Module]:
    """Burn: `other.into_record().save(path)` (or `save_into` a BurnpackStore)."""
    source = _distinct(Other())
    tensors = [PackTensor(s.full_path, s.dtype, tuple(s.shape), s.param_id, s.data_fn)
               for s in collect(source, None, PyTorchToBurnAdapter())]  # fmt: skip
    path.write_bytes(b"".join(bytes(c) for c in encode_chunks(tensors, metadata)))
    return path, source


def _loaded_the_rest(model: Mixed, source: nn.Module, bias: torch.Tensor) -> None:
    for name in ("fc.weight", "fc.bias", "head.weight", "norm.weight", "norm.bias"):
        assert torch.equal(model.state_dict()[name], source.state_dict()[name]), name
    assert torch.equal(model.head.bias, bias)  # missing from the file: kept as it was


@both_writers
def test_strict_load_file_names_the_missing_and_the_unused_tensor(tmp_path, metadata):
    path, _ = _burn_file(tmp_path / "other.bpk", metadata)
    with pytest.raises(RecordError, match=r"(?s)missing 'head.bias'.*unused 'extra.bias'") as error:
        Mixed().load_file(path, BurnpackFileRecorder())
    assert "strict=False" in str(error.value)
    with pytest.raises(RecordError, match=r"unused 'extra.weight'"):
        Mixed().load_record(ModuleRecord.load(path), strict=True)


@both_writers
def test_load_file_strict_false_loads_the_rest_and_reports_them(tmp_path, metadata):
    # burnish: `model.load_file(path, BurnpackFileRecorder(), strict=False)`.
    path, source = _burn_file(tmp_path / "other.bpk", metadata)
    model = Mixed()
    bias = model.head.bias.detach().clone()
    with pytest.warns(UserWarning, match=r"load_record\(strict=False\) skipped 3 entries of "
                      r"Mixed: .*missing 'head.bias'.*unused 'extra.bias'"):  # fmt: skip
        model.load_file(path, BurnpackFileRecorder(), strict=False)
    _loaded_the_rest(model, source, bias)
    record_model = Mixed()
    bias = record_model.head.bias.detach().clone()
    with pytest.warns(UserWarning, match=r"skipped 3 entries of Mixed: .*unused 'extra.weight'"):
        record_model.load_record(ModuleRecord.load(path), strict=False)
    _loaded_the_rest(record_model, source, bias)


def test_strict_false_reports_as_a_state_dicts_load_record_does(tmp_path):
    path, _ = _burn_file(tmp_path / "other.bpk", None)
    state_dict = _distinct(Other()).state_dict()  # the same defects, PyTorch's layout
    with pytest.warns(UserWarning) as plain:
        Mixed().load_record(state_dict, strict=False)
    with pytest.warns(UserWarning) as burn:
        Mixed().load_record(ModuleRecord.load(path), strict=False)
    prefix = "load_record(strict=False) skipped 3 entries of Mixed: "
    assert str(plain[0].message).startswith(prefix)
    assert str(burn[0].message).startswith(prefix)
    for key in ("head.bias", "extra.weight", "extra.bias"):
        assert key in str(plain[0].message) and key in str(burn[0].message), key


def test_strict_false_skips_a_tensor_that_does_not_fit(tmp_path):
    path, source = _burn_file(tmp_path / "other.bpk", BURNPACK_METADATA)
    record = ModuleRecord.load(path)
    record["norm.gamma"] = torch.ones(5)  # a shape no LayerNorm(3) takes
    model = Mixed()
    norm = model.norm.weight.detach().clone()
    with pytest.raises(RecordError, match=r"norm"):
        Mixed().load_record(record)
    with pytest.warns(UserWarning, match=r"skipped 4 entries of Mixed: .*norm"):
        model.load_record(record, strict=False)
    assert torch.equal(model.norm.weight, norm)
    assert torch.equal(model.fc.weight, source.fc.weight)

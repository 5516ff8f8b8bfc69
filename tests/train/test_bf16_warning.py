"""`.mixed_precision("bf16")` on a device without native bf16 warns once, at fit start, that bf16
is emulated there and several times slower than float32 (issue N2, item 3). The CPU's bf16 is
forced off or on through `burnish.capability`'s view of it, as tests/test_capability.py does."""

from __future__ import annotations

import pytest

from burnish import capability

from tests.train.test_mixed_precision import fit

NO_BF16 = {"cpu_name": "Some EPYC", "avx2": True, "avx512_f": False, "avx512_bf16": False}
WARNING = 'mixed_precision("bf16") on cpu: Some EPYC has no native bf16'


def experiment_log(tmp_path) -> str:
    return (tmp_path / "artifacts" / "experiment.log").read_text()


def test_bf16_on_a_cpu_without_native_bf16_warns_once_per_run(tmp_path, monkeypatch):
    monkeypatch.setattr(capability, "_cpu_capabilities", lambda: dict(NO_BF16))
    fit(tmp_path, "bf16", epochs=2)  # 2 epochs of 2 iterations: still one warning
    log = experiment_log(tmp_path)
    assert log.count(WARNING) == 1, log
    line = next(line for line in log.splitlines() if WARNING in line)
    assert "WARNING" in line
    assert "several times slower than float32" in line
    assert 'burnish.capability.bf16_support("cpu")' in line


@pytest.mark.parametrize(
    ("flags", "precision"),
    [({"avx512_bf16": True}, "bf16"), ({"amx_bf16": True}, "bf16"), ({}, "fp16"), ({}, None)],
)
def test_no_warning_with_native_bf16_float16_or_float32(tmp_path, monkeypatch, flags, precision):
    monkeypatch.setattr(capability, "_cpu_capabilities", lambda: {**NO_BF16, **flags})
    fit(tmp_path, precision)
    log = experiment_log(tmp_path)
    assert "Model summary" in log  # the log was written: the run started
    assert "mixed_precision(" not in log and "native bf16" not in log

"""`bf16_support`: native bf16 told from torch's view of the CPU (and of a CUDA device)."""

from __future__ import annotations

import pytest
import torch

from burnish import capability
from burnish.capability import bf16_support

NO_BF16 = {"cpu_name": "Some EPYC", "avx2": True, "avx512_f": False, "avx512_bf16": False}


def test_a_cpu_without_bf16_instructions_is_not_native_and_says_what_it_has(monkeypatch):
    monkeypatch.setattr(capability, "_cpu_capabilities", lambda: dict(NO_BF16))
    support = bf16_support("cpu")
    assert not support and support.native is False
    assert support.reason == (
        "Some EPYC has no native bf16 (AVX2, no AVX512-BF16 or AMX): bf16 would be emulated"
    )


@pytest.mark.parametrize("flag", ["avx512_bf16", "amx_bf16"])
def test_a_cpu_with_avx512_bf16_or_amx_is_native_and_names_the_flag(monkeypatch, flag):
    monkeypatch.setattr(capability, "_cpu_capabilities", lambda: {**NO_BF16, flag: True})
    support = bf16_support(torch.device("cpu"))
    assert support.native
    assert support.reason == f"Some EPYC has native bf16 ({flag})"


def test_this_machine_agrees_with_torch_cpuinfo():
    capabilities = torch.cpu.get_capabilities()
    expected = bool(capabilities.get("avx512_bf16") or capabilities.get("amx_bf16"))
    if capabilities.get("architecture") == "x86_64":
        assert bf16_support().native is expected
    assert bf16_support().reason.startswith(str(capabilities.get("cpu_name")))


def test_other_devices_are_not_native_and_a_missing_cuda_says_so():
    assert not bf16_support("mps").native
    if not torch.cuda.is_available():
        support = bf16_support("cuda:0")
        assert not support.native and support.reason == "cuda:0 is not available: no bf16 to use"
    else:  # compute capability 8.0 and later
        major, _ = torch.cuda.get_device_capability(0)
        assert bf16_support("cuda:0").native is (major >= 8)


def test_the_instruction_set_line_names_the_widest_vectors_and_the_bf16():
    from burnish.capability import cpu_instruction_set

    flags = {**NO_BF16, "architecture": "x86_64"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(capability, "_cpu_capabilities", lambda: flags)
        assert cpu_instruction_set() == "x86_64, AVX2, no bf16"
        flags.update(avx512_f=True, avx512_bf16=True, amx_bf16=True)
        assert cpu_instruction_set() == "x86_64, AVX-512, AVX512-BF16 + AMX-BF16"
    assert cpu_instruction_set().startswith(str(torch.cpu.get_capabilities()["architecture"]))

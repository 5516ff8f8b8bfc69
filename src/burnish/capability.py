"""What a device computes natively: whether bf16 is fast here or emulated.

A CPU without bf16 instructions (AVX2 or AVX-512 without AVX512-BF16, no AMX) runs bf16
autocast by converting each operand to float32 and back: a small model trains several times
slower than in float32. `bf16_support(device)` tells, with the reason in words, so that a
program can choose its precision by the machine it runs on::

    support = bf16_support("cpu")
    precision = "bf16" if support.native else None  # None: float32
    print(support.reason)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["Bf16Support", "bf16_support", "cpu_instruction_set"]


@dataclass(frozen=True)
class Bf16Support:
    """Whether a device has bf16 arithmetic of its own.

    Args:
        native: True where bf16 matrix products run in hardware (not emulated).
        reason: one sentence naming the device and what decided it.
    """

    native: bool
    reason: str

    def __bool__(self) -> bool:
        return self.native


def _cpu_capabilities() -> dict[str, object]:
    """torch's view of this CPU (`torch.cpu.get_capabilities()`: cpuinfo's flags)."""
    get = getattr(torch.cpu, "get_capabilities", None)
    return dict(get()) if callable(get) else {}


def _cpu_support() -> Bf16Support:
    capabilities = _cpu_capabilities()
    name = str(capabilities.get("cpu_name") or "this CPU")
    found = sorted(key for key, value in capabilities.items() if "bf16" in key and value is True)
    if found:
        return Bf16Support(True, f"{name} has native bf16 ({', '.join(found)})")
    sets = [label for key, label in _SETS if capabilities.get(key) is True]
    has = f"{'/'.join(sets)}, " if sets else ""
    return Bf16Support(
        False, f"{name} has no native bf16 ({has}no AVX512-BF16 or AMX): bf16 would be emulated"
    )


_SETS = (("avx2", "AVX2"), ("avx512_f", "AVX-512"))


def cpu_instruction_set() -> str:
    """This CPU's widest vector instructions and its bf16, for the line a measured time is
    quoted with: e.g. `"x86_64, AVX-512, no bf16"` or `"x86_64, AVX2, AMX-BF16"`."""
    capabilities = _cpu_capabilities()
    parts = [str(capabilities.get("architecture") or "unknown architecture")]
    sets = [label for key, label in _SETS if capabilities.get(key) is True]
    if sets:
        parts.append(sets[-1])
    found = [key for key, label in _BF16 if capabilities.get(key) is True]
    parts.append(" + ".join(label for key, label in _BF16 if key in found) if found else "no bf16")
    return ", ".join(parts)


_BF16 = (("avx512_bf16", "AVX512-BF16"), ("amx_bf16", "AMX-BF16"))


def _cuda_support(device: torch.device) -> Bf16Support:
    if not torch.cuda.is_available():
        return Bf16Support(False, f"{device} is not available: no bf16 to use")
    index = device.index if device.index is not None else torch.cuda.current_device()
    name = torch.cuda.get_device_name(index)
    major, minor = torch.cuda.get_device_capability(index)
    if major >= 8:
        return Bf16Support(True, f"{name} (compute capability {major}.{minor}) has native bf16")
    return Bf16Support(
        False,
        f"{name} (compute capability {major}.{minor}) has no native bf16 (8.0 and later do): "
        "bf16 would be emulated",
    )


def bf16_support(device: torch.device | str = "cpu") -> Bf16Support:
    """Whether `device` computes in bf16 natively, and why (Burn's backends ask the same).

    The CPU: native with AVX512-BF16 or AMX-BF16 (x86) or any bf16 feature torch's cpuinfo
    reports (Arm); CUDA: compute capability 8.0 or later (Ampere on). Other devices (MPS, ...)
    report not native: their bf16 speed is not known here.

    Args:
        device: `"cpu"`, `"cuda"`, `"cuda:1"`, or a `torch.device`.

    Returns:
        A `Bf16Support`: `native`, and `reason`, one sentence for a log.
    """
    device = torch.device(device)
    if device.type == "cpu":
        return _cpu_support()
    if device.type == "cuda":
        return _cuda_support(device)
    return Bf16Support(False, f"{device.type}: bf16 speed unknown here, float32 is the safe choice")

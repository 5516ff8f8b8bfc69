"""The optimizers' state as torch's functional kernels take it: one list per state entry.

An optimizer's state is a dict per parameter (`Optimizer._states`); the kernels take one list
per entry (all the first moments, all the step counters). These helpers make those lists
without a Python frame per parameter.
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import torch
from torch import Tensor

__all__ = ["STEP_DTYPE", "column", "fused_supported", "new_step", "steps_on_device"]

# Step counters stay on the CPU as torch.optim keeps them, so bias corrections never sync.
STEP_DTYPE = torch.get_default_dtype


def column(states: list[dict[str, Any]], key: str) -> list[Any]:
    """`[state[key] for state in states]`, without a Python frame per state."""
    return list(map(itemgetter(key), states))


def fused_supported(params: list[Tensor], devices: tuple[str, ...]) -> bool:
    """Whether torch has a fused kernel of the optimizer for `params`' device."""
    return params[0].device.type in devices


def steps_on_device(states: list[dict[str, Any]], params: list[Tensor]) -> list[Tensor]:
    """The step counters of `states`, moved once to their parameter's device.

    Fused kernels count steps on the device; the foreach kernels keep them on the CPU.
    """
    steps = column(states, "step")
    if steps[0].device != params[0].device:
        for state, param in zip(states, params):
            state["step"] = state["step"].to(param.device, non_blocking=True)
        steps = column(states, "step")
    return steps


def new_step() -> Tensor:
    """A step counter before the first step: a CPU scalar of the default dtype."""
    return torch.tensor(0.0, dtype=STEP_DTYPE())

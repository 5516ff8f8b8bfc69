"""Muon (Burn main: `MuonConfig` / `Muon`, `AdjustLrFn`)."""

from __future__ import annotations

import enum
import math
from functools import partial
from operator import attrgetter, is_
from typing import Any

import torch
from torch import Tensor

from burnish.config import config
from burnish.errors import ConfigError
from burnish.optim.base import Optimizer
from burnish.optim.decay import WeightDecayConfig
from burnish.optim.kernel_state import column
from burnish.optim.momentum import MomentumConfig

__all__ = ["AdjustLrFn", "Muon", "MuonConfig"]

_GROUP_KEY = attrgetter("shape", "dtype", "device")
_is_none = partial(is_, None)
_MAX_GROUPINGS = 64  # cached (shape, dtype, device) layouts of the parameter lists stepped


class AdjustLrFn(enum.Enum):
    """How Muon scales the learning rate by the shape `[A, B]` of a matrix (Burn's names).

    `[A, B]` is the shape in Burn's layout: Burn's `Linear` holds its weight as `[d_input,
    d_output]`, PyTorch's `nn.Linear` as `[d_output, d_input]`. Muon therefore reads a 2-D
    parameter's shape transposed (`burn_shape`), so `nn.Linear(8, 4)` gets Burn's ratio for
    `LinearConfig::new(8, 4)`: `sqrt(8 / 4)` with `Original`.

    * `Original` (default; Keller Jordan): `lr * sqrt(max(1, A / B))`.
    * `MatchRmsAdamW` (Moonshot, "Muon is Scalable for LLM Training"): `lr * 0.2 *
      sqrt(max(A, B))`, which matches AdamW's update RMS so AdamW's learning rate and weight
      decay can be reused.
    """

    Original = "original"
    MatchRmsAdamW = "match_rms_adamw"

    def adjustment_ratio(self, shape: tuple[int, ...] | list[int]) -> float:
        """The factor applied to the learning rate for a parameter of `shape` (1 below 2-D)."""
        if len(shape) < 2:
            return 1.0
        a, b = float(shape[0]), float(shape[1])
        if self is AdjustLrFn.Original:
            return math.sqrt(max(1.0, a / b))
        return 0.2 * math.sqrt(max(a, b))

    @staticmethod
    def burn_shape(shape: tuple[int, ...] | list[int]) -> list[int]:
        """A PyTorch parameter's shape in Burn's layout: the last two dimensions swapped.

        `nn.Linear(d_input, d_output).weight` is `[d_output, d_input]`; Burn's `Linear`
        weight, the shape Burn's `adjustment_ratio` is written for, is `[d_input, d_output]`.
        """
        shape = list(shape)
        if len(shape) >= 2:
            shape[-2], shape[-1] = shape[-1], shape[-2]
        return shape

    def ratio_for(self, param_shape: tuple[int, ...] | list[int]) -> float:
        """The factor Muon applies to the lr of a PyTorch parameter of `param_shape`.

        Burn's ratio for the same layer: `adjustment_ratio(burn_shape(param_shape))`.
        """
        return self.adjustment_ratio(self.burn_shape(param_shape))


@config
class MuonConfig:
    """Configuration of `Muon`, with Burn's defaults.

    Args:
        weight_decay: decoupled decay `p *= 1 - lr * penalty`, applied after the
            orthogonalization with the unadjusted `lr` (None: no decay).
        momentum: SGD momentum before the orthogonalization (Burn default: momentum 0.95,
            dampening 0, Nesterov).
        ns_coefficients: the quintic Newton-Schulz coefficients `(a, b, c)`.
        epsilon: lower bound of the Frobenius norm the update is divided by.
        ns_steps: Newton-Schulz iterations.
        adjust_lr_fn: the shape-dependent learning-rate factor (`AdjustLrFn`).
    """

    weight_decay: WeightDecayConfig | None = None
    momentum: MomentumConfig = MomentumConfig(momentum=0.95, dampening=0.0, nesterov=True)
    ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315)
    epsilon: float = 1e-7
    ns_steps: int = 5
    adjust_lr_fn: AdjustLrFn = AdjustLrFn.Original

    def __post_init__(self) -> None:
        if not isinstance(self.ns_steps, int) or isinstance(self.ns_steps, bool):
            raise ConfigError(f"`ns_steps` must be an int. Received: {self.ns_steps!r}.")
        if not 1 <= self.ns_steps < 100:
            raise ConfigError(
                f"`ns_steps` (Newton-Schulz iterations) must be in [1, 100). Received: "
                f"ns_steps={self.ns_steps}. Burn and Keller Jordan use 5."
            )
        if len(self.ns_coefficients) != 3:
            raise ConfigError(
                "`ns_coefficients` must be three numbers (a, b, c). Received: "
                f"{self.ns_coefficients!r}."
            )
        if not self.epsilon > 0.0:
            raise ConfigError(f"`epsilon` must be > 0. Received: epsilon={self.epsilon!r}.")
        if not 0.0 <= self.momentum.momentum < 1.0:
            raise ConfigError(
                "`momentum.momentum` must be in [0, 1). Received: "
                f"momentum={self.momentum.momentum!r}."
            )
        if not isinstance(self.adjust_lr_fn, AdjustLrFn):
            raise ConfigError(
                "`adjust_lr_fn` must be AdjustLrFn.Original or AdjustLrFn.MatchRmsAdamW. "
                f"Received: {self.adjust_lr_fn!r}."
            )

    def init(self) -> Muon:
        """Build the optimizer."""
        return Muon(self)


class Muon(Optimizer):
    """Muon: SGD momentum, then each update matrix replaced by a near-orthogonal one.

    Keller Jordan, 2024, "Muon: An optimizer for hidden layers in neural networks"; Liu et
    al., 2025, "Muon is Scalable for LLM Training". As Burn, per step:

    1. `b = momentum(g)` (`MomentumConfig`: Nesterov by default);
    2. `O = NS(b)`: `X = b / max(||b||_F, eps)` (transposed when taller than wide), then
       `ns_steps` times `A = X X^T`, `X = a X + (b A + c A A) X`;
    3. `p *= 1 - lr * penalty` (weight decay with the unadjusted `lr`);
    4. `p -= lr * adjust_lr_fn.ratio_for(p.shape) * O`: Burn's ratio for the same layer,
       its shape read in Burn's `[d_input, d_output]` layout (`AdjustLrFn.burn_shape`).

    The orthogonalization runs in the parameter's dtype (Burn; `torch.optim.Muon` casts to
    bfloat16), batched: the matrices of one shape, dtype and device are stacked and iterated
    with `torch.baddbmm`, so a step costs a few kernels per distinct shape, not per tensor.

    **Matrices only.** As Burn (which panics on a tensor that is not 2-D) and
    `torch.optim.Muon`, stepping a parameter that is not a matrix raises a `ValueError`
    naming it: give biases, norms and embeddings to another optimizer (AdamW) with split
    gradients, `GradientsParams.from_params` / `from_module`.
    """

    def __init__(self, config: MuonConfig) -> None:
        super().__init__(None)  # Burn's Muon has no gradient clipping
        self.config = config
        self._groups: dict[tuple, tuple[Any, list[tuple[Any, float]]]] = {}

    def _new_state(self, param: Tensor) -> dict[str, Any]:
        return {"velocity": None}

    def _state(self, name: str, param: Tensor) -> dict[str, Any]:
        if param.dim() != 2:
            raise ValueError(
                f"Muon optimizes matrices only (2-D parameters, as Burn's Muon). Received: "
                f"parameter {name!r} with shape {list(param.shape)}. Step it with another "
                "optimizer (e.g. AdamW): split the gradients with GradientsParams.from_params "
                "or from_module and give Muon only the weight matrices."
            )
        return super()._state(name, param)

    def _update(
        self, lr: float, params: list[Tensor], grads: list[Tensor], states: list[dict]
    ) -> None:
        updates = self._momentum(grads, states)
        order, groups = self._grouping(params)
        ordered_params = list(order(params))
        ordered_updates = list(order(updates))
        orthogonal: list[Tensor] = []
        start = 0
        for count, ratio in groups:  # one pass per distinct (shape, dtype, device)
            stacked = torch.stack(ordered_updates[start : start + count])
            stacked = self._newton_schulz(stacked)
            stacked.mul_(lr * ratio)
            orthogonal.extend(stacked.unbind(0))
            start += count
        decay = self.config.weight_decay
        if decay is not None and decay.penalty != 0.0:
            torch._foreach_mul_(ordered_params, 1.0 - lr * decay.penalty)
        torch._foreach_sub_(ordered_params, orthogonal)

    def _momentum(self, grads: list[Tensor], states: list[dict]) -> Any:
        """Burn's `Momentum::transform`: the velocity, or `g + mu v` with Nesterov."""
        momentum = self.config.momentum
        velocities = column(states, "velocity")
        new = list(map(_is_none, velocities))
        if any(new):  # first steps: v starts at g (a zero velocity plus an undamped g)
            velocities = self._start_velocities(states, velocities, grads)
            scales = list(map((1.0 - momentum.dampening, 1.0).__getitem__, new))
            torch._foreach_mul_(velocities, momentum.momentum)
            torch._foreach_add_(velocities, torch._foreach_mul(grads, scales))
        else:
            torch._foreach_mul_(velocities, momentum.momentum)
            torch._foreach_add_(velocities, grads, alpha=1.0 - momentum.dampening)
        if momentum.nesterov:
            return torch._foreach_add(grads, velocities, alpha=momentum.momentum)
        return velocities

    @staticmethod
    def _start_velocities(
        states: list[dict], velocities: list[Tensor | None], grads: list[Tensor]
    ) -> list[Tensor]:
        """Zero velocities for the parameters stepped for the first time (once per parameter)."""
        for state, velocity, grad in zip(states, velocities, grads):
            if velocity is None:
                state["velocity"] = torch.zeros_like(grad, memory_format=torch.preserve_format)
        return column(states, "velocity")

    def _grouping(self, params: list[Tensor]) -> tuple[Any, list[tuple[int, float]]]:
        """A getter putting `params` in group order, and each group's size and lr ratio.

        Cached by the parameters' (shape, dtype, device): one C-level pass per step.
        """
        key = tuple(map(_GROUP_KEY, params))
        cached = self._groups.get(key)
        if cached is None:
            if len(self._groups) >= _MAX_GROUPINGS:  # e.g. ever-changing gradient subsets
                self._groups.clear()
            members: dict[tuple, list[int]] = {}
            for index, group_key in enumerate(key):
                members.setdefault(group_key, []).append(index)
            indices = [i for group in members.values() for i in group]
            getter = partial(_pick, indices)
            adjust = self.config.adjust_lr_fn
            groups = [(len(g), adjust.ratio_for(k[0])) for k, g in members.items()]
            cached = self._groups[key] = (getter, groups)
        return cached

    def _newton_schulz(self, stacked: Tensor) -> Tensor:
        """The quintic Newton-Schulz iteration on a stack of matrices `[k, A, B]`."""
        a, b, c = self.config.ns_coefficients
        tall = stacked.shape[-2] > stacked.shape[-1]
        x = stacked.mT if tall else stacked
        norm = torch.linalg.vector_norm(x, dim=(-2, -1), keepdim=True)
        x = x / norm.clamp_min(self.config.epsilon)
        for _ in range(self.config.ns_steps):
            gram = torch.bmm(x, x.mT)
            polynomial = torch.baddbmm(gram, gram, gram, beta=b, alpha=c)
            x = torch.baddbmm(x, polynomial, x, beta=a)
        return x.mT if tall else x


def _pick(indices: list[int], items: list[Tensor]) -> list[Tensor]:
    """`[items[i] for i in indices]`, without a Python frame per item."""
    return list(map(items.__getitem__, indices))

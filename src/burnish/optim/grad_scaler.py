"""Dynamic loss scaling for float16 training with explicit gradients.

float16 gradients underflow to zero below ~6e-8. A `GradScaler` multiplies the loss by a large
factor (the *scale*) before `bn.backward`, so the gradients are computed scaled, then divides
them back (`unscale`) before clipping and the optimizer step. A step whose gradients hold an inf
or a NaN is skipped (parameters and optimizer state untouched) and the scale halved; after
`growth_interval` good steps in a row the scale doubles. These are `torch.amp.GradScaler`'s
semantics and kernels, applied to the gradients burnish *returns*:

    scaler = GradScaler()
    with torch.autocast(device.type, dtype=torch.float16):
        loss = loss_fn(model(images), targets)
    grads = GradientsParams.from_grads(bn.backward(scaler.scale(loss)), model)
    model = scaler.step(optim, lr, model, grads)   # unscale, check, step or skip
    scaler.update()                                # once per iteration

Nothing here waits for the device: the "found inf" flag stays a device tensor, the scale is
updated on the device, and Adam, AdamW, SGD (and AdaGrad on the CPU) skip a step inside their
fused kernels. The other optimizers read the flag back once per step, as
`torch.amp.GradScaler` does for every optimizer without such a kernel.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from operator import itemgetter
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

from burnish.optim import grads as _grads
from burnish.optim.base import Optimizer
from burnish.optim.params import GradientsParams

__all__ = ["GradScaler"]

M = TypeVar("M", bound=nn.Module)
_GRAD = itemgetter(2)


class GradScaler:
    """Scales the loss for `bn.backward` and unscales the returned gradients.

    Args:
        init_scale: the first scale.
        growth_factor: the scale is multiplied by this after `growth_interval` good steps.
        backoff_factor: the scale is multiplied by this after a step with inf/NaN gradients.
        growth_interval: good steps in a row before the scale grows.
        enabled: False makes every method a pass-through (one code path for every precision).

    Its tensors live on the device of the first loss it scales.
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        if not init_scale > 0:
            raise ValueError(f"`init_scale` must be > 0. Received: init_scale={init_scale!r}.")
        if not growth_factor > 1.0:
            raise ValueError(
                f"`growth_factor` must be > 1. Received: growth_factor={growth_factor!r}."
            )
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(
                f"`backoff_factor` must be in (0, 1). Received: backoff_factor={backoff_factor!r}."
            )
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int):
            raise ValueError(
                f"`growth_interval` must be an integer >= 1. Received: "
                f"growth_interval={growth_interval!r}."
            )
        if growth_interval < 1:
            raise ValueError(
                f"`growth_interval` must be an integer >= 1. Received: "
                f"growth_interval={growth_interval!r}."
            )
        self.growth_factor = float(growth_factor)
        self.backoff_factor = float(backoff_factor)
        self.growth_interval = growth_interval
        self.enabled = enabled
        self._scale = torch.full((1,), float(init_scale), dtype=torch.float32)
        self._growth_tracker = torch.zeros(1, dtype=torch.int32)
        self._found_inf = torch.zeros((), dtype=torch.float32)
        self._unscaled: list[GradientsParams] = []  # unscaled since the last `update`

    # -- the four steps ----------------------------------------------------------------------

    def scale(self, loss: Tensor) -> Tensor:
        """`loss` times the current scale (a device multiply, no sync)."""
        if not self.enabled:
            return loss
        if self._scale.device != loss.device:
            self.to_device(loss.device)
        return loss * self._scale.view(())

    def unscale(self, grads: GradientsParams) -> GradientsParams:
        """Divide `grads` by the scale in place and note whether any is inf or NaN.

        Call it to read or clip the true gradients before `step`; `step` unscales the gradients
        itself otherwise (never twice). Returns `grads`.
        """
        if not self.enabled or any(grads is done for done in self._unscaled):
            return grads
        values = list(map(_GRAD, grads._entries.values()))
        if values:
            if self._scale.device != values[0].device:
                self.to_device(values[0].device)
            inverse = self._scale.double().reciprocal().float()
            torch._amp_foreach_non_finite_check_and_unscale_(values, self._found_inf, inverse)
        self._unscaled.append(grads)
        return grads

    def step(self, optim: Optimizer, lr: float, model: M, grads: GradientsParams) -> M:
        """`optim.step(lr, model, grads)` on the unscaled gradients, unless one is inf or NaN.

        A skipped step leaves the parameters and the optimizer state as they were; its
        gradients are consumed either way. Returns `model`.
        """
        if not self.enabled:
            return optim.step(lr, model, grads)
        self.unscale(grads)
        return optim._step(lr, model, grads, self._found_inf)

    def update(self) -> None:
        """Adjust the scale after the iteration's steps: back off after inf/NaN, else grow
        every `growth_interval` good steps. Call once per iteration, after `step`."""
        if not self.enabled:
            return
        torch._amp_update_scale_(
            self._scale,
            self._growth_tracker,
            self._found_inf,
            self.growth_factor,
            self.backoff_factor,
            self.growth_interval,
        )
        self._found_inf.zero_()
        self._unscaled.clear()

    # -- Learner support -------------------------------------------------------------------

    @contextlib.contextmanager
    def scaling(self) -> Iterator[None]:
        """Within this block, `bn.backward(loss)` differentiates `scale(loss)`.

        The Learner runs `train_step` inside it, so a step written for float32 trains under
        float16 unchanged; the gradients it returns are scaled until the Learner unscales them
        before the optimizer step.
        """
        if not self.enabled:
            yield
            return
        previous = _grads._loss_scaler
        _grads._loss_scaler = self.scale
        try:
            yield
        finally:
            _grads._loss_scaler = previous

    # -- state -------------------------------------------------------------------------------

    @property
    def found_inf(self) -> Tensor:
        """The device flag of the steps since the last `update`: 1.0 if one was skipped for an
        inf/NaN gradient (the tensor itself, zeroed in place by `update`: clone it to keep)."""
        return self._found_inf

    def get_scale(self) -> Tensor:
        """The current scale, a 1-element float32 tensor on the scaler's device (a copy)."""
        return self._scale.clone()

    def to_device(self, device: torch.device | str) -> GradScaler:
        """Keep the scaler's tensors on `device`; returns self."""
        self._scale = self._scale.to(device, non_blocking=True)
        self._growth_tracker = self._growth_tracker.to(device, non_blocking=True)
        self._found_inf = self._found_inf.to(device, non_blocking=True)
        return self

    def to_record(self) -> dict[str, Any]:
        """`{"scale": float, "growth_tracker": int}` (reads the device back once)."""
        return {
            "scale": float(self._scale.item()),
            "growth_tracker": int(self._growth_tracker.item()),
        }

    def load_record(self, record: dict[str, Any]) -> GradScaler:
        """Continue from a `to_record()`; returns self."""
        self._scale.fill_(float(record["scale"]))
        self._growth_tracker.fill_(int(record["growth_tracker"]))
        self._found_inf.zero_()
        self._unscaled.clear()
        return self

    def __repr__(self) -> str:
        return (
            f"GradScaler(growth_factor={self.growth_factor}, backoff_factor="
            f"{self.backoff_factor}, growth_interval={self.growth_interval}, "
            f"enabled={self.enabled})"
        )

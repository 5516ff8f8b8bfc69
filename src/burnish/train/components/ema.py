"""An exponential moving average of a model's weights (`with_ema`), updated on the device.

After every `update_every`-th optimizer step `t` (counted in EMA updates `n = 1, 2, ...`):

    ema = decay_n * ema + (1 - decay_n) * model          # one torch._foreach_lerp_ call

for every parameter and floating-point buffer (`buffers="copy"`: buffers are copied instead,
as timm's `exclude_buffers`); integer buffers (BatchNorm's `num_batches_tracked`) are always
copied, in one `torch._foreach_copy_`. No Python work per tensor, no host sync: `decay_n` is a
host float computed from a host counter.

`decay_n = decay`, or with `warmup=True` timm's `ModelEmaV3` warm-up (after @crowsonkb):
`decay_n = min(decay, 1 - n ** -warmup_power)`, so the first update copies the
weights and the average forgets its start quickly while the model moves most. With
`warmup_power=2/3` the decay reaches 0.999 after ~31.6k updates, with 3/4 after ~10k.

The average lives beside the model, on its device and in its dtypes. It is in every
checkpoint (`ema` record) and a resumed run continues it exactly.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from typing import Any, Literal

import torch
from torch import Tensor, nn

from burnish.module import into_record, load_record

__all__ = ["EmaSettings", "ModelEma"]

log = logging.getLogger("burnish.train")

EmaBuffers = Literal["average", "copy"]
EmaValidate = Literal["ema", "model", "both"]


@dataclasses.dataclass(frozen=True)
class EmaSettings:
    """What `with_ema(...)` asked for; checked when given.

    Attributes:
        decay: the weight of the average at each update, in [0, 1).
        warmup: use timm's warm-up of the decay (see the module docstring).
        warmup_power: the warm-up's power (2/3 for runs of a million steps or more, 3/4 for
            shorter ones).
        update_every: update after every this many optimizer steps (Composer's
            `update_interval`); the decay is per update, not adjusted.
        buffers: `"average"` floating-point buffers as parameters (timm's default) or
            `"copy"` them from the model.
        validate: which weights validation runs on: `"ema"` (the average), `"model"` (the
            trained weights, as without EMA) or `"both"` (the average for the split's
            metrics, the trained weights for `Raw <metric>` twins of each numeric one).
    """

    decay: float
    warmup: bool = False
    warmup_power: float = 2 / 3
    update_every: int = 1
    buffers: EmaBuffers = "average"
    validate: EmaValidate = "ema"

    def __post_init__(self) -> None:
        if isinstance(self.decay, bool) or not isinstance(self.decay, (int, float)):
            raise TypeError(f"`decay` must be a float in [0, 1). Received: decay={self.decay!r}.")
        if not 0.0 <= self.decay < 1.0:
            raise ValueError(
                f"`decay` must be in [0, 1) (e.g. 0.999; 0 keeps a copy of the weights). "
                f"Received: decay={self.decay!r}."
            )
        if not isinstance(self.warmup_power, (int, float)) or not self.warmup_power > 0:
            raise ValueError(
                f"`warmup_power` must be > 0 (2/3 or 3/4 are usual). Received: "
                f"warmup_power={self.warmup_power!r}."
            )
        every = self.update_every
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(
                f"`update_every` must be an integer >= 1. Received: update_every={every!r}."
            )
        if self.buffers not in ("average", "copy"):
            raise ValueError(
                "`buffers` must be 'average' (moving average of floating-point buffers, such "
                "as BatchNorm statistics) or 'copy' (take the model's). Received: "
                f"buffers={self.buffers!r}."
            )
        if self.validate not in ("ema", "model", "both"):
            raise ValueError(
                "`validate` must be 'ema' (validate the averaged weights), 'model' (the "
                "trained weights) or 'both'. Received: "
                f"validate={self.validate!r}."
            )

    def decay_at(self, update: int) -> float:
        """The decay of the `update`-th update (1-based)."""
        if not self.warmup:
            return float(self.decay)
        warm = 1.0 - float(update) ** -self.warmup_power
        return min(float(self.decay), warm)


class ModelEma:
    """The moving average of `model`'s parameters and buffers, kept in a copy of it.

    Args:
        model: the model being trained (not wrapped by FSDP).
        settings: the decay and its options.

    Attributes:
        module: the averaged model: a deep copy of `model` in eval mode, without gradients.
        steps: optimizer steps seen.
        updates: updates made (`steps // update_every`).
    """

    def __init__(self, model: nn.Module, settings: EmaSettings) -> None:
        self.settings = settings
        self.module = copy.deepcopy(model).eval().requires_grad_(False)
        self.steps = 0
        self.updates = 0
        self._source: nn.Module | None = None
        self._bind(model)

    def update(self, model: nn.Module) -> None:
        """Count an optimizer step of `model`; on every `update_every`-th, average."""
        self.steps += 1
        if self.steps % self.settings.update_every:
            return
        if model is not self._source:
            self._bind(model)
        self.updates += 1
        weight = 1.0 - self.settings.decay_at(self.updates)
        with torch.no_grad():
            if self._averaged:
                torch._foreach_lerp_(self._averaged, self._targets, weight)
            if self._copied:
                torch._foreach_copy_(self._copied, self._sources)

    def to_record(self) -> dict[str, Any]:
        """`{"module": record, "steps": int, "updates": int}` (tensors share storage)."""
        return {"module": into_record(self.module), "steps": self.steps, "updates": self.updates}

    def load_record(self, record: dict[str, Any] | None, model: nn.Module) -> None:
        """Continue from `to_record()`; None (a checkpoint saved without EMA): start the
        average from `model`'s weights."""
        if record is None:
            log.warning(
                "The checkpoint holds no EMA average (it was saved without with_ema): the "
                "average starts from its weights."
            )
            self.module.load_state_dict(model.state_dict())
            return
        load_record(self.module, record["module"])
        self.steps = int(record["steps"])
        self.updates = int(record["updates"])

    def _bind(self, model: nn.Module) -> None:
        """Pair each tensor of the average with the model's, once per model."""
        ema, live = _named_tensors(self.module), _named_tensors(model)
        if ema.keys() != live.keys():
            raise ValueError(
                "The EMA copy and the model no longer have the same parameters and buffers "
                f"(the copy has {len(ema)}, the model {len(live)}). Build the model's "
                "structure completely before training; the average is a copy taken at `fit`."
            )
        averaged = set(dict(self.module.named_parameters()))
        if self.settings.buffers == "average":
            averaged |= {name for name, t in ema.items() if t.is_floating_point()}
        self._averaged = [ema[name] for name in ema if name in averaged]
        self._targets = [live[name] for name in ema if name in averaged]
        self._copied = [ema[name] for name in ema if name not in averaged]
        self._sources = [live[name] for name in ema if name not in averaged]
        self._source = model


def _named_tensors(module: nn.Module) -> dict[str, Tensor]:
    """Parameters and buffers by qualified name (a shared parameter once)."""
    named: dict[str, Tensor] = dict(module.named_parameters())
    named.update(module.named_buffers())
    return named

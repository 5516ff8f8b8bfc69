"""AdamW with decoupled weight decay on the weight matrices only.

Norms, biases and embeddings are not decayed (GPT-2, nanoGPT, the Chinchilla recipes). In
burnish gradients are values that can be split: `step` gives the no-decay parameters'
gradients to an AdamW without decay, which takes them out of `grads`, then the rest to an
AdamW with decay — two optimizer steps per iteration on disjoint gradients, at the same
learning rate. The Learner steps it as any optimizer (`step(lr, model, grads)`) and
checkpoints it through `to_record`/`load_record`.
"""

from __future__ import annotations

import weakref
from typing import Any, TypeVar

from torch import nn

from burnish.optim import AdamWConfig, GradientsParams

M = TypeVar("M", bound=nn.Module)


class SplitDecayAdamW:
    """Two AdamWs from one config: `config`'s weight decay on the parameters not named by
    `model.no_decay_parameters()`, none on those.

    Args:
        config: the AdamW of the decayed parameters (its `grad_clipping` applies to each
            group: `global_norm` is then the norm of each group's gradients).
    """

    def __init__(self, config: AdamWConfig) -> None:
        self.decay = config.init()
        self.no_decay = config.with_weight_decay(0.0).init()
        self._model: weakref.ref[nn.Module] | None = None
        self._view: nn.Module | None = None

    def step(self, lr: float, model: M, grads: GradientsParams) -> M:
        """Apply `grads`: the no-decay group's first (removing them from `grads`), then the rest."""
        self.no_decay.step(lr, self._no_decay_view(model), grads)
        return self.decay.step(lr, model, grads)

    def _no_decay_view(self, model: nn.Module) -> nn.Module:
        """A module holding the model's no-decay parameters under their own names, built once
        per model. Stepping it moves exactly those parameters and takes their gradients out of
        `grads` in one pass (the optimizer keys gradients by parameter), with no Python loop
        over the tensors at each step."""
        model = getattr(model, "module", model)  # a DistributedDataParallel wrapper's model
        if self._view is None or self._model is None or self._model() is not model:
            names = model.no_decay_parameters()  # type: ignore[operator]
            self._view = parameter_view(model, names)
            self._model = weakref.ref(model)
        return self._view

    def to_record(self) -> dict[str, Any]:
        return {"decay": self.decay.to_record(), "no_decay": self.no_decay.to_record()}

    def load_record(self, record: dict[str, Any]) -> SplitDecayAdamW:
        self.decay.load_record(record["decay"])
        self.no_decay.load_record(record["no_decay"])
        return self


def parameter_view(model: nn.Module, names: list[str]) -> nn.Module:
    """A module tree holding `model`'s parameters `names` (the same tensors) under the same
    qualified names, so an optimizer's state reads as the model's."""
    view = nn.Module()
    parameters = dict(model.named_parameters())
    for name in names:
        *path, leaf = name.split(".")
        owner = view
        for part in path:
            if not hasattr(owner, part):
                owner.add_module(part, nn.Module())
            owner = getattr(owner, part)
        owner.register_parameter(leaf, parameters[name])
    return view

"""`ParallelismOptions`: where the run trains and how the model is spread over the ranks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from burnish.train.settings.fields import OptionGroup

if TYPE_CHECKING:
    import torch
    from torch import nn

    from burnish.train.parallel.execution_strategy import (
        ExecutionStrategy,
        SupervisedLearningStrategy,
    )

__all__ = ["ParallelismOptions"]


@dataclasses.dataclass(frozen=True)
class ParallelismOptions(OptionGroup):
    """Where the run trains and how the model is spread over the ranks.

    Attributes:
        device: the device to train on; None: where the model and loaders already are (set
            at build from `execution` when one is given).
        kind: how the model is spread over several ranks (`strategy`): `"ddp"` (replicated,
            gradients averaged) or `"fsdp"` (sharded with FSDP2).
        shard_policy: under `"fsdp"`, which submodules are sharded as units (None: each
            direct child module with parameters).
        execution: Burn main's `ExecutionStrategy` (`with_training_strategy`), None: none.
        custom: a `TrainingStrategy.custom` strategy, run by `SupervisedTraining.launch`.
    """

    device: torch.device | None = None
    kind: str = "ddp"
    shard_policy: Callable[[nn.Module], bool] | None = None
    execution: ExecutionStrategy | None = None
    custom: SupervisedLearningStrategy | None = None

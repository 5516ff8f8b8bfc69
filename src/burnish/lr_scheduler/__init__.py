"""Learning-rate schedulers (Burn's `burn::lr_scheduler`).

scheduler = CosineAnnealingLrSchedulerConfig(1e-3, num_iters=1000).init()
lr = scheduler.step()        # the first call returns initial_lr
"""

from burnish.lr_scheduler.base import LrScheduler
from burnish.lr_scheduler.composed import ComposedLrScheduler, SchedulerReduction
from burnish.lr_scheduler.composite_config import (
    ComposedLrSchedulerConfig,
    LrSchedulerConfigType,
    SequentialLrSchedulerConfig,
)
from burnish.lr_scheduler.constant import ConstantLr, as_scheduler
from burnish.lr_scheduler.cosine import (
    CosineAnnealingLrScheduler,
    CosineAnnealingLrSchedulerConfig,
)
from burnish.lr_scheduler.exponential import (
    ExponentialLrScheduler,
    ExponentialLrSchedulerConfig,
)
from burnish.lr_scheduler.linear import LinearLrScheduler, LinearLrSchedulerConfig
from burnish.lr_scheduler.module_config import ModuleLrSchedulerConfig
from burnish.lr_scheduler.module_lr_scheduler import ModuleLearningRate, ModuleLrScheduler
from burnish.lr_scheduler.noam import NoamLrScheduler, NoamLrSchedulerConfig
from burnish.lr_scheduler.scheduler_config import LrSchedulerConfig
from burnish.lr_scheduler.sequential import SequentialLrScheduler
from burnish.lr_scheduler.step import StepLrScheduler, StepLrSchedulerConfig

__all__ = [
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "LrScheduler",
    "LrSchedulerConfig",
    "LrSchedulerConfigType",
    "ModuleLearningRate",
    "ModuleLrScheduler",
    "ModuleLrSchedulerConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "SchedulerReduction",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "as_scheduler",
]

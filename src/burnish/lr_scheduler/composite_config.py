"""The scheduler configs that hold scheduler configs (Burn: `ComposedLrSchedulerConfig`,
`SequentialLrSchedulerConfig`), and the type of a child schedule, `LrSchedulerConfigType`.

The three are mutually recursive (a composed schedule may hold a sequential one and the
reverse), so they live in this one module: the union names both classes, defined above it, and
their fields name the union, which `typing.get_type_hints` resolves in this module when a
config is saved or loaded. No forward reference crosses a module.
"""

from __future__ import annotations

from burnish.config import config
from burnish.errors import ConfigError
from burnish.lr_scheduler.children import build_children
from burnish.lr_scheduler.composed import ComposedLrScheduler, SchedulerReduction
from burnish.lr_scheduler.cosine import CosineAnnealingLrSchedulerConfig
from burnish.lr_scheduler.exponential import ExponentialLrSchedulerConfig
from burnish.lr_scheduler.linear import LinearLrSchedulerConfig
from burnish.lr_scheduler.noam import NoamLrSchedulerConfig
from burnish.lr_scheduler.sequential import SequentialLrScheduler
from burnish.lr_scheduler.step import StepLrSchedulerConfig

__all__ = ["ComposedLrSchedulerConfig", "LrSchedulerConfigType", "SequentialLrSchedulerConfig"]


@config
class ComposedLrSchedulerConfig:
    """Steps every schedule each iteration and combines their learning rates.

    `lr_i = reduce(s.step() for s in schedulers)` with `reduction` Prod (default:
    the product), Sum, or Avg (the sum divided by the number of schedules). With no
    schedule: Prod gives 1.0, Sum and Avg 0.0 (floats), as Burn.

    Example:
        >>> config = (ComposedLrSchedulerConfig()
        ...     .linear(LinearLrSchedulerConfig(1e-3, 1e-2, 100))
        ...     .cosine(CosineAnnealingLrSchedulerConfig(1.0, 1000)))
    """

    schedulers: list[LrSchedulerConfigType] = []
    reduction: SchedulerReduction = SchedulerReduction.Prod

    def constant(self, lr: float) -> ComposedLrSchedulerConfig:
        """A copy with a constant learning rate appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, float(lr)], self.reduction)

    def linear(self, config: LinearLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a linear schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def cosine(self, config: CosineAnnealingLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a cosine schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def exponential(self, config: ExponentialLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with an exponential schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def noam(self, config: NoamLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a Noam schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def step(self, config: StepLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a step schedule appended."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def composed(self, config: ComposedLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """A copy with a composed schedule appended (its rates reduced by its own reduction)."""
        return ComposedLrSchedulerConfig([*self.schedulers, config], self.reduction)

    def init(self) -> ComposedLrScheduler:
        """Build the scheduler (and every child; their errors propagate).

        Burn main's `init()` wraps it in a `ModuleLrScheduler`; this is the scheduler itself
        (Burn's `build()`), which the learner takes as well: `.with_group(..)` wraps it.
        """
        return ComposedLrScheduler(build_children(self.schedulers), self.reduction)

    def build(self) -> ComposedLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


@config
class SequentialLrSchedulerConfig:
    """Hands over from one schedule to the next at the given milestones.

    A milestone is a number of completed `step()` calls: with schedulers `[a, b]` and
    milestones `[100]`, steps 0..99 come from `a` and step 100 is `b`'s *first* step (each
    schedule starts fresh when it takes over, and is only stepped while active). `N`
    schedulers take exactly `N - 1` milestones, each >= 1 and strictly increasing.

    Example:
        >>> warmup = LinearLrSchedulerConfig(1e-5, 1e-2, 100)
        >>> decay = CosineAnnealingLrSchedulerConfig(1e-2, 900)
        >>> SequentialLrSchedulerConfig([warmup, decay], [100])
    """

    schedulers: list[LrSchedulerConfigType]
    milestones: list[int]

    def init(self) -> SequentialLrScheduler:
        """Build the scheduler.

        Raises:
            ConfigError: on an empty list, a wrong number of milestones, or milestones that
                are not >= 1 and strictly increasing (and on any child's error).
        """
        if not self.schedulers:
            raise ConfigError("At least one scheduler is required. Received: schedulers=[].")
        if len(self.milestones) + 1 != len(self.schedulers):
            raise ConfigError(
                "The number of milestones must be one less than the number of schedulers. "
                f"Received: {len(self.milestones)} milestones for {len(self.schedulers)} "
                "schedulers."
            )
        previous = 0
        for milestone in self.milestones:
            if milestone <= previous:
                raise ConfigError(
                    "Milestones must be greater than zero and strictly increasing. Received: "
                    f"milestones={self.milestones}."
                )
            previous = milestone
        return SequentialLrScheduler(build_children(self.schedulers), list(self.milestones))

    def build(self) -> SequentialLrScheduler:
        """The scheduler itself (Burn's crate-internal `build`); the same as `init()`."""
        return self.init()


# A child schedule, the values of Burn's `LrSchedulerConfig` enum: a float (a constant
# learning rate) or a scheduler config, the two composite ones included.
LrSchedulerConfigType = (
    float
    | LinearLrSchedulerConfig
    | CosineAnnealingLrSchedulerConfig
    | ExponentialLrSchedulerConfig
    | NoamLrSchedulerConfig
    | StepLrSchedulerConfig
    | ComposedLrSchedulerConfig
    | SequentialLrSchedulerConfig
)

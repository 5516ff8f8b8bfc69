"""Burn's `LrSchedulerConfig` enum: one schedule of a composed or sequential config.

Burn writes `LrSchedulerConfig::Linear(LinearLrSchedulerConfig::new(..))`, or `config.into()`;
burnish writes `LrSchedulerConfig.Linear(LinearLrSchedulerConfig(..))`, or the config itself.
Each variant returns its value (the float or the config): a config's JSON records which
config it is, as Burn's enum tag, so lists of them save and load whole.
"""

from __future__ import annotations

from typing import Any, NoReturn, TypeVar

from burnish.lr_scheduler.composite_config import (
    ComposedLrSchedulerConfig,
    LrSchedulerConfigType,
    SequentialLrSchedulerConfig,
)
from burnish.lr_scheduler.cosine import CosineAnnealingLrSchedulerConfig
from burnish.lr_scheduler.exponential import ExponentialLrSchedulerConfig
from burnish.lr_scheduler.linear import LinearLrSchedulerConfig
from burnish.lr_scheduler.noam import NoamLrSchedulerConfig
from burnish.lr_scheduler.step import StepLrSchedulerConfig

__all__ = ["LrSchedulerConfig"]

C = TypeVar("C")

_CONFIGS = (
    LinearLrSchedulerConfig,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    NoamLrSchedulerConfig,
    StepLrSchedulerConfig,
    ComposedLrSchedulerConfig,
    SequentialLrSchedulerConfig,
)


class _EnumMeta(type):
    """`isinstance(x, LrSchedulerConfig)`: whether `x` is the value of one of the variants."""

    def __instancecheck__(cls, instance: Any) -> bool:
        if isinstance(instance, bool):
            return False
        return isinstance(instance, (float, int, *_CONFIGS))


class LrSchedulerConfig(metaclass=_EnumMeta):
    """The variants of Burn's `LrSchedulerConfig` (not instantiated: call a variant).

    Example:
        >>> from burnish.lr_scheduler import (CosineAnnealingLrSchedulerConfig,
        ...     LinearLrSchedulerConfig, LrSchedulerConfig, SequentialLrSchedulerConfig)
        >>> config = SequentialLrSchedulerConfig(
        ...     [LrSchedulerConfig.Linear(LinearLrSchedulerConfig(1e-5, 1e-2, 100)),
        ...      LrSchedulerConfig.Cosine(CosineAnnealingLrSchedulerConfig(1e-2, 900))],
        ...     [100])
        >>> scheduler = config.init()
    """

    # The type of a field that holds one (`schedulers: list[LrSchedulerConfigType]`).
    Type = LrSchedulerConfigType

    def __new__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError(
            "LrSchedulerConfig is Burn's enum: build a variant, such as "
            "LrSchedulerConfig.Constant(1e-3) or LrSchedulerConfig.Linear(LinearLrSchedulerConfig"
            "(1e-3, 1e-5, 100)), or pass the float or the config itself. Received: "
            f"LrSchedulerConfig{args!r}."
        )

    @staticmethod
    def Constant(lr: float) -> float:
        """A constant learning rate (Burn: `LrSchedulerConfig::Constant(lr)`)."""
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise TypeError(
                f"LrSchedulerConfig.Constant takes a float. Received: {lr!r} ({type(lr).__name__})."
            )
        return float(lr)

    @staticmethod
    def Linear(config: LinearLrSchedulerConfig) -> LinearLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Linear(config)`."""
        return _variant("Linear", config, LinearLrSchedulerConfig)

    @staticmethod
    def Cosine(
        config: CosineAnnealingLrSchedulerConfig,
    ) -> CosineAnnealingLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Cosine(config)`."""
        return _variant("Cosine", config, CosineAnnealingLrSchedulerConfig)

    @staticmethod
    def Exponential(
        config: ExponentialLrSchedulerConfig,
    ) -> ExponentialLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Exponential(config)`."""
        return _variant("Exponential", config, ExponentialLrSchedulerConfig)

    @staticmethod
    def Noam(config: NoamLrSchedulerConfig) -> NoamLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Noam(config)`."""
        return _variant("Noam", config, NoamLrSchedulerConfig)

    @staticmethod
    def Step(config: StepLrSchedulerConfig) -> StepLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Step(config)`."""
        return _variant("Step", config, StepLrSchedulerConfig)

    @staticmethod
    def Composed(config: ComposedLrSchedulerConfig) -> ComposedLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Composed(config)`."""
        return _variant("Composed", config, ComposedLrSchedulerConfig)

    @staticmethod
    def Sequential(
        config: SequentialLrSchedulerConfig,
    ) -> SequentialLrSchedulerConfig:
        """Burn: `LrSchedulerConfig::Sequential(config)`."""
        return _variant("Sequential", config, SequentialLrSchedulerConfig)


def _variant(name: str, config: Any, expected: type[C]) -> C:
    if not isinstance(config, expected):
        raise TypeError(
            f"LrSchedulerConfig.{name} takes a {expected.__name__}. Received: {config!r} "
            f"({type(config).__name__})."
        )
    return config

"""What an early-stopping or checkpointing strategy's state is about (`stopping_rule`): a
checkpoint records it beside the strategy's state, and a resume whose strategy watches
something else starts that state afresh instead of comparing unlike values."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.components.early_stopping import EarlyStoppingStrategy

__all__ = ["stopping_rule"]


def stopping_rule(strategy: EarlyStoppingStrategy | CheckpointingStrategy | None) -> str | None:
    """What an early-stopping or checkpointing strategy's state is about: the metric it
    watches, on which split, aggregated and compared how (`Loss (valid, mean, lowest)`); a
    composed strategy's, its parts' in order; None without one. Its patience, warmup or number
    of checkpoints kept are not part of it: a kept best stays meaningful when they change."""
    if strategy is None:
        return None
    parts = getattr(strategy, "strategies", None)
    if isinstance(parts, list):  # ComposedCheckpointingStrategy
        return f"{type(strategy).__name__}[{'; '.join(str(stopping_rule(p)) for p in parts)}]"
    watched = ", ".join(f"{name} ({split}" for name, split in strategy.watched_metrics())
    details = [
        str(getattr(strategy, attribute))
        for attribute in ("aggregate", "direction")
        if hasattr(strategy, attribute)
    ]
    kind = type(strategy).__name__
    return f"{kind}: {watched}{''.join(', ' + d for d in details)})" if watched else kind

"""Checkpointing: when to save and delete epoch checkpoints."""

from burnish.train.checkpoint.strategy import (
    CheckpointingAction,
    CheckpointingStrategy,
    ComposedCheckpointingStrategy,
    ComposedCheckpointingStrategyBuilder,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
    default_checkpointing_strategy,
)

__all__ = [
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "ComposedCheckpointingStrategyBuilder",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
    "default_checkpointing_strategy",
]

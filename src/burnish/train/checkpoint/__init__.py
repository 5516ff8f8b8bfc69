"""Checkpointing: atomic checkpoint directories, and when to save and delete them."""

from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer
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
    "CheckpointId",
    "FileCheckpointer",
    "CheckpointingAction",
    "CheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "ComposedCheckpointingStrategyBuilder",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
    "default_checkpointing_strategy",
]

"""Checkpointing: atomic checkpoint directories written in the background, and when to save and
delete them."""

from burnish.train.checkpoint.async_writer import AsyncCheckpointer
from burnish.train.checkpoint.base import Checkpointer, CheckpointerError
from burnish.train.checkpoint.custom import CustomCheckpointers
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
    "AsyncCheckpointer",
    "Checkpointer",
    "CheckpointerError",
    "CustomCheckpointers",
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

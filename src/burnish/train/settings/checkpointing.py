"""`CheckpointingOptions`: what is checkpointed, how often, which checkpoints are kept, and
where the run starts from."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from burnish.train.settings.fields import OptionGroup, positive

if TYPE_CHECKING:
    from burnish.record.base import FileRecorder
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.resume import ResumeFrom
    from burnish.train.checkpoint.strategy import CheckpointingStrategy

__all__ = ["CheckpointingOptions"]


@dataclasses.dataclass(frozen=True)
class CheckpointingOptions(OptionGroup):
    """What is checkpointed, how often, which checkpoints are kept, where the run starts.

    Attributes:
        recorder: writes each part of a checkpoint (`with_file_checkpointer`); None: none.
        checkpointers: Burn-trait checkpointers of the model, optimizer and scheduler
            (`with_custom_checkpointers`); None: none.
        checkpointer: writes checkpoint directories, made at build from `recorder` or
            `checkpointers`; None: no checkpoints.
        retention: which epoch checkpoints to keep (`with_checkpointing_strategy`); unset:
            the default one, made at build.
        resume_from: the checkpoint to start from, None for a fresh start.
        every: also checkpoint every this many training iterations.
    """

    recorder: FileRecorder | None = None
    checkpointers: tuple[Any, Any, Any] | None = None
    checkpointer: FileCheckpointer | None = None
    retention: CheckpointingStrategy | None = None
    resume_from: int | ResumeFrom | None = None
    every: int | None = positive("checkpoint_every")

    def kept(self) -> CheckpointingStrategy:
        """The retention in force (set at build).

        Raises:
            RuntimeError: on options not made by a builder's build.
        """
        if self.retention is None:
            raise RuntimeError("The checkpoint retention is chosen at build: build the options.")
        return self.retention

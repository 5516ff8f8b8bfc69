"""Choosing the checkpoint a run resumes from (`checkpoint(epoch)`, `resume()`)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from typing import Any

import torch

from burnish.errors import CheckpointError, RecordError
from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer
from burnish.train.report.announce import Announcer

__all__ = ["ResumeFrom", "ResumePoint", "find_resume_point"]


class ResumeFrom(str, enum.Enum):
    """Which checkpoint a run starts from, besides an epoch number."""

    LATEST = "latest"
    """`checkpoint("latest")`: the newest complete checkpoint; an error if there is none."""
    AUTO = "auto"
    """`resume()`: the newest complete checkpoint, or a fresh start if there is none."""


@dataclasses.dataclass
class ResumePoint:
    """A checkpoint and the records read from it."""

    checkpoint: CheckpointId
    records: dict[str, Any]


def find_resume_point(
    checkpointer: FileCheckpointer,
    wanted: int | ResumeFrom,
    device: torch.device | None = None,
    clean: bool = True,
    wait: Callable[[], None] | None = None,
    announce: Announcer | None = None,
) -> ResumePoint | None:
    """Load the checkpoint `wanted`; None for a fresh start.

    `checkpoint(epoch)` loads exactly that epoch's checkpoint. `checkpoint("latest")` and
    `resume()` take the newest committed checkpoint that verifies, falling back to older ones
    (with a warning) when a newer one is corrupt; `resume()` alone starts fresh when the run has
    no checkpoint at all.

    Args:
        checkpointer: the run's checkpoint directories.
        wanted: an epoch, `ResumeFrom.LATEST` or `ResumeFrom.AUTO`.
        device: where the records' tensors are loaded.
        clean: remove incomplete checkpoint directories first (rank 0 only).
        wait: called after cleaning, before reading (a barrier with several ranks).
        announce: tells the user (log and console) what was removed or skipped; default:
            the log only.

    Raises:
        CheckpointError: if the requested checkpoint is missing or corrupt, or every
            checkpoint is.
    """
    announce = announce or Announcer()
    _warn_if_approximate(checkpointer.recorder, announce)
    removed = checkpointer.clean_incomplete() if clean else []
    if removed:
        announce.warning(f"Removed incomplete checkpoints left by a crash: {', '.join(removed)}")
    if wait is not None:
        wait()
    if isinstance(wanted, int):
        point = CheckpointId(wanted)
        return ResumePoint(point, _load(checkpointer, point, device))
    return _newest(checkpointer, device, announce, fresh_if_none=wanted is ResumeFrom.AUTO)


def _warn_if_approximate(recorder: Any, announce: Announcer) -> None:
    settings = getattr(recorder, "settings", None)
    if getattr(settings, "float_dtype", None) in (torch.float16, torch.bfloat16):
        announce.warning(
            f"Checkpoints are recorded in half precision ({type(recorder).__name__}): the "
            "resumed run continues close to, not exactly like, an uninterrupted one. Use "
            "DefaultRecorder() for exact resume."
        )


def _newest(
    checkpointer: FileCheckpointer,
    device: torch.device | None,
    announce: Announcer,
    fresh_if_none: bool,
) -> ResumePoint | None:
    candidates = list(reversed(checkpointer.committed()))
    if not candidates:
        if fresh_if_none:
            # The first start of a run that uses `resume()` to start or continue: no warning.
            announce.info(
                f"resume(): no checkpoint in {checkpointer.directory}, starting from scratch."
            )
            return None
        raise CheckpointError(
            f"No checkpoint to resume from in {str(checkpointer.directory)!r}. Train without "
            "`checkpoint(...)` first, or use `resume()` to start fresh when there is none."
        )
    errors = []
    for point in candidates:
        try:
            return ResumePoint(point, _load(checkpointer, point, device))
        except CheckpointError as error:
            announce.warning(f"Skipping checkpoint {point.name}: {_one_line(error)}")
            errors.append(f"{point.name}: {error}")
    raise CheckpointError("Every checkpoint is damaged:\n" + "\n".join(errors))


def _load(
    checkpointer: FileCheckpointer, point: CheckpointId, device: torch.device | None
) -> dict[str, Any]:
    try:
        return checkpointer.load(point, device)
    except RecordError as error:
        raise CheckpointError(f"Checkpoint {point.name} cannot be read: {error}") from error


def _one_line(error: Exception) -> str:
    """The error's message on one line (a record error may span several)."""
    return " ".join(str(error).split())

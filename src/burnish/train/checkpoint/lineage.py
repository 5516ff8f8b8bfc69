"""A run's lineage: the line (branch) each checkpoint belongs to, and how a branch begins.

One rule: starting from `checkpoint(N)` while later checkpoints or metric logs of the current
line exist begins a *branch*. The part of the run it leaves is moved aside, kept and named,
into `<artifact_dir>/branches/<n>-from-<checkpoint>/`: a copy of the artifact directory's
files as they were (metric logs, `validations.json`, the trackers' files, `experiment.log`;
everything but `checkpoint/`, `branches/` and the lock) and, moved there, the checkpoints later
than the one branched from. Afterwards the checkpoint directory holds only the new line's
checkpoints, so `resume()` continues the newest line, never the abandoned one, and the live
logs show the branch's history.

A branch begins crash-safely, as `Retention` finishes deletions: the decision is written first
(`branches/pending.json`), then the copy is made (`.tmp-<name>`, renamed into place), the
checkpoints are moved one by one, `branches/lineage.json` records the line, and the decision is
removed. Every start (a `resume()` too) first finishes a decision a kill left behind; each
step is idempotent.

Each checkpoint records its line (`Line`) in its `learner` record; a checkpoint without one
belongs to line 0. What a run knows when it starts is a `RunStart`: fresh, continuing a line,
or beginning a branch, from which checkpoint at which global step.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import os
import shutil
from pathlib import Path
from typing import Any

from burnish.errors import RecordError
from burnish.io import atomic_write_bytes, fsync_dir
from burnish.train.checkpoint.file import CheckpointId, committed_checkpoints

__all__ = ["Line", "Lineage", "RunStart", "StartKind"]

BRANCHES = "branches"
_PENDING = "pending.json"
_LINEAGE = "lineage.json"
_NOT_COPIED = {BRANCHES, ".burnish.lock"}
_LINE_KEYS = ("number", "parent", "from", "step")


class StartKind(str, enum.Enum):
    """How a run starts: from scratch, continuing its line, or beginning a branch."""

    FRESH = "fresh"
    CONTINUE = "continue"
    BRANCH = "branch"


@dataclasses.dataclass(frozen=True)
class Line:
    """A line of a run's history.

    Attributes:
        number: 0 for the run's first line, then 1, 2, ... for each branch, in the order
            they began.
        parent: the line it branched from: the line the run was on when it began, whose
            later part its archive holds (the checkpoint `origin` may have been written by
            an earlier line that parent shares it with); None for line 0. The trackers' runs
            link to the parent's run the same way.
        origin: the checkpoint it branched at (`epoch-2`); None for line 0.
        step: the global step (training iterations) of that checkpoint: the last step the
            branch shares with its parent; None for line 0.
    """

    number: int = 0
    parent: int | None = None
    origin: str | None = None
    step: int | None = None

    def to_record(self) -> dict[str, Any]:
        """`{"number", "parent", "from", "step"}`."""
        return {
            "number": self.number,
            "parent": self.parent,
            "from": self.origin,
            "step": self.step,
        }

    @classmethod
    def from_record(cls, record: Any) -> Line:
        """The line `to_record()` describes; line 0 for None (a checkpoint from before lines).

        Raises:
            RecordError: if `record` is neither None nor a `to_record()` dict.
        """
        if record is None:
            return cls()
        if not isinstance(record, dict) or set(record) != set(_LINE_KEYS):
            raise RecordError(
                "A checkpoint's line record must be a dict with `number`, `parent`, `from` and "
                f"`step`. Received: {record!r}. The checkpoint's `learner` record is damaged."
            )
        return cls(int(record["number"]), record["parent"], record["from"], record["step"])


@dataclasses.dataclass(frozen=True)
class RunStart:
    """What a run knows when it starts (`LearningCheckpointer.start`, after `restore`).

    Attributes:
        kind: fresh, continuing a line, or beginning a branch.
        line: the line this run writes (for a branch: the new one).
        checkpoint: the checkpoint it started from (`epoch-2`); None when fresh.
        step: the global step of that checkpoint (the next step is `step + 1`); None when fresh.
        archive: for a branch, where the part it left was moved (`branches/<n>-from-...`).
    """

    kind: StartKind
    line: Line
    checkpoint: str | None = None
    step: int | None = None
    archive: Path | None = None


class Lineage:
    """The lines of the run in `artifact_dir` whose checkpoints are in `checkpoints`."""

    def __init__(self, artifact_dir: Path, checkpoints: Path) -> None:
        self.artifact_dir = Path(artifact_dir)
        self.checkpoints = Path(checkpoints)
        self.directory = self.artifact_dir / BRANCHES

    def current(self) -> Line | None:
        """The newest line that began (None: the run never branched)."""
        lines = self._lines()
        if not lines:
            return None
        return Line.from_record({key: lines[-1][key] for key in _LINE_KEYS})

    def later(self, point: CheckpointId) -> list[CheckpointId]:
        """The committed checkpoints after `point`."""
        newest = point.sort_key()
        return [c for c in committed_checkpoints(self.checkpoints) if c.sort_key() > newest]

    def begin(self, parent: Line, point: CheckpointId, step: int) -> tuple[Line, Path]:
        """Begin a branch of `parent` at `point` (global step `step`): decide, then move the
        later part aside. Returns the new line and where the part it left went."""
        number = max([0, *(int(line["number"]) for line in self._lines())]) + 1
        line = Line(number, parent.number, point.name, step)
        decision = {"line": line.to_record(), "name": self.archive(line).name}
        self.directory.mkdir(exist_ok=True)
        atomic_write_bytes(self.directory / _PENDING, json.dumps(decision).encode())
        return line, self._carry_out(decision)

    def finish_pending(self) -> tuple[Line, Path] | None:
        """Finish a branch whose start a kill cut short: its line and archive; None if none."""
        path = self.directory / _PENDING
        if not path.is_file():
            return None
        try:
            decision = json.loads(path.read_text())
        except ValueError:  # written atomically: unreadable only if damaged by hand
            raise RecordError(
                f"{path} is damaged; it records a branch being started. Delete it to forget "
                "that branch, then start again."
            ) from None
        return Line.from_record(decision["line"]), self._carry_out(decision)

    def archive(self, line: Line) -> Path:
        """Where the part that `line` left was moved."""
        return self.directory / f"{line.number}-from-{line.origin}"

    def _carry_out(self, decision: dict[str, Any]) -> Path:
        line = Line.from_record(decision["line"])
        archive = self.directory / decision["name"]
        if not archive.is_dir():
            self._copy_files(archive)
        moved = archive / self.checkpoints.name
        moved.mkdir(exist_ok=True)
        assert line.origin is not None
        origin = CheckpointId.parse(line.origin)
        assert origin is not None
        for point in self.later(origin):
            os.replace(self.checkpoints / point.name, moved / point.name)
        fsync_dir(moved)
        fsync_dir(self.checkpoints)
        lines = [entry for entry in self._lines() if entry["number"] != line.number]
        entry = {**line.to_record(), "archive": str(archive.relative_to(self.artifact_dir))}
        record = {"current": line.number, "lines": [*lines, entry]}
        atomic_write_bytes(self.directory / _LINEAGE, json.dumps(record, indent=2).encode())
        (self.directory / _PENDING).unlink()
        fsync_dir(self.directory)
        return archive

    def _copy_files(self, archive: Path) -> None:
        """The artifact directory's files (not its checkpoints) as they are, into `archive`."""
        tmp = archive.with_name(f".tmp-{archive.name}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        for entry in sorted(self.artifact_dir.iterdir()):
            if entry.name in _NOT_COPIED or entry == self.checkpoints:
                continue
            if entry.is_dir():
                shutil.copytree(entry, tmp / entry.name)
            else:
                shutil.copy2(entry, tmp / entry.name)
        os.replace(tmp, archive)
        fsync_dir(self.directory)

    def _lines(self) -> list[dict[str, Any]]:
        path = self.directory / _LINEAGE
        if not path.is_file():
            return []
        lines = json.loads(path.read_text())["lines"]
        assert isinstance(lines, list)
        return lines

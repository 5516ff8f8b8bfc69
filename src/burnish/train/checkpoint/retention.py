"""Which epoch checkpoints a run keeps, recorded in every checkpoint it writes.

After each epoch the checkpointing strategy says what to save and what to delete; the new
checkpoint is committed first and the deletions follow. A crash between the two leaves on
disk a checkpoint that the committed strategy state has already let go of, and no later
decision would ever name it again. So each checkpoint also records the epoch checkpoints that
remain once its own deletions are done, and a resume finishes the job: every committed
checkpoint older than the one it resumes from that is not in that list is removed. Removing is
idempotent, so a crash during the clean-up is harmless too.

The checkpoint of a run's last epoch is always saved, also when the strategy would not keep it:
it records how the run ended (`RunEnd`) and holds the model `fit` returned. If the run is later
continued (resumed with more epochs), that extra checkpoint is deleted after the next epoch.

The strategy's numbers are epochs; with `valid_every` they count validations, and a validation
inside an epoch is checkpointed as `epoch-N-iteration-K`: the learner then names the checkpoint
of every number it plans (`points`), and a number it never named has no checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from burnish.errors import RecordError
from burnish.train.checkpoint.file import CheckpointId

if TYPE_CHECKING:
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.run_end import RunEnd
    from burnish.train.checkpoint.strategy import CheckpointingAction

__all__ = ["Retention"]


class Retention:
    """The epoch checkpoints a run keeps, as its strategy's actions leave them.

    Attributes:
        kept: the epochs whose checkpoints exist once the last decided deletions are done.
        end_only: the last epoch of an ended run, saved only to record the end (its strategy
            did not keep it); None otherwise.
        points: the checkpoint of each number, when the learner names them (`valid_every`);
            None: the checkpoint of epoch N is `epoch-N`.
    """

    def __init__(self) -> None:
        self.kept: set[int] = set()
        self.end_only: int | None = None
        self.points: dict[int, CheckpointId] | None = None

    def plan(
        self,
        epoch: int,
        actions: list[CheckpointingAction],
        end: RunEnd | None,
        point: CheckpointId | None = None,
    ) -> tuple[bool, list[int]]:
        """Whether to save `epoch`'s checkpoint, and the epochs to delete once it is committed.

        Args:
            epoch: the epoch that just ended (with `valid_every`: the validation).
            actions: the strategy's actions for it.
            end: how the run ended at `epoch`, None if it goes on.
            point: the checkpoint written for it, None for `epoch-<epoch>`.
        """
        if point is not None:
            self.points = self.points or {}
            self.points[epoch] = point
        save = any(action.is_save for action in actions)
        deletions = [action.epoch for action in actions if action.epoch is not None]
        if self.end_only is not None and self.end_only != epoch:  # the run went on past it
            deletions.append(self.end_only)
        self.end_only = epoch if end is not None and not save else None
        save = save or end is not None
        if save:
            self.kept.add(epoch)
        self.kept.difference_update(deletions)
        return save, deletions

    def checkpoint(self, epoch: int) -> CheckpointId | None:
        """The checkpoint of `epoch` (a strategy's number); None if it has none."""
        if self.points is None:
            return CheckpointId(epoch)
        return self.points.get(epoch)

    def keeps(self, checkpoint: CheckpointId) -> bool:
        """Whether `checkpoint` is one the run keeps."""
        return any(self.checkpoint(epoch) == checkpoint for epoch in self.kept)

    def stale(self, checkpointer: FileCheckpointer, resumed: CheckpointId) -> list[CheckpointId]:
        """The committed checkpoints older than `resumed` that the run no longer keeps.

        Mid-epoch checkpoints older than `resumed` are superseded (but those a validation inside
        an epoch saved for the strategy, which it may keep); newer checkpoints (a
        corrupt one `resume()` skipped, or later ones `checkpoint(epoch)` goes back from) are
        left alone.
        """
        return [
            point
            for point in checkpointer.committed()
            if point.sort_key() < resumed.sort_key() and not self.keeps(point)
        ]

    def to_record(self) -> dict[str, Any]:
        """`{"kept": [epochs], "end_only": epoch or None}`, and `"points": {number: name}` of
        the kept numbers when the learner names their checkpoints."""
        record: dict[str, Any] = {"kept": sorted(self.kept), "end_only": self.end_only}
        if self.points is not None:
            kept = sorted(n for n in self.kept if n in self.points)
            record["points"] = {str(n): self.points[n].name for n in kept}
        return record

    def load_record(self, record: Any, present: Iterable[int] = ()) -> None:
        """Restore the state saved by `to_record`.

        Args:
            record: what `to_record()` returned, or None for a checkpoint that does not record
                it (written by an earlier burnish): then every epoch checkpoint `present` on
                disk counts as kept, so nothing is deleted on a guess.
            present: the epochs of the committed epoch checkpoints up to the resumed one.

        Raises:
            RecordError: if `record` is neither None nor a `to_record()` dict.
        """
        self.points = None
        if record is None:
            self.kept, self.end_only = set(present), None
            return
        keys = set(record) if isinstance(record, dict) else set()
        if keys not in ({"kept", "end_only"}, {"kept", "end_only", "points"}):
            raise RecordError(
                "A checkpoint retention record must be a dict with `kept` and `end_only` (and "
                f"`points`). Received: {record!r}. The checkpoint's `learner` record is damaged."
            )
        self.kept = {int(epoch) for epoch in record["kept"]}
        end_only = record["end_only"]
        self.end_only = None if end_only is None else int(end_only)
        if "points" in record:
            self.points = {int(n): _checkpoint(name) for n, name in record["points"].items()}


def _checkpoint(name: Any) -> CheckpointId:
    point = CheckpointId.parse(name) if isinstance(name, str) else None
    if point is None:
        raise RecordError(
            "A retention record's `points` must name checkpoints (`epoch-N` or "
            f"`epoch-N-iteration-K`). Received: {name!r}. The checkpoint's `learner` record "
            "is damaged."
        )
    return point

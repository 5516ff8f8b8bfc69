"""`CheckpointSetters`: what the training checkpoints hold, which are kept, how often they
are written and where the run resumes from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from burnish.train.checkpoint.resume import ResumeFrom
from burnish.train.settings.setters import Setters

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.record.base import FileRecorder
    from burnish.train.checkpoint.strategy import CheckpointingStrategy

__all__ = ["CheckpointSetters"]


class CheckpointSetters(Setters):
    """The checkpoint setters of `TrainingBuilder`."""

    def with_file_checkpointer(self, recorder: FileRecorder) -> Self:
        """Save model, optimizer, scheduler and loop state under `checkpoint/` each epoch."""
        return self._set("checkpointing", recorder=recorder, checkpointers=None)

    def with_default_checkpointers(self) -> Self:
        """Burn main's default checkpoints: model, optimizer, scheduler (and the loop's state)
        as Burnpack files (`BurnpackFileRecorder`), under `checkpoint/` as
        `with_file_checkpointer` writes them: committed atomically, resumed exactly."""
        from burnish.record.store.recorder import BurnpackFileRecorder

        return self._set("checkpointing", recorder=BurnpackFileRecorder(), checkpointers=None)

    def with_custom_checkpointers(self, model: Any, optim: Any, scheduler: Any) -> Self:
        """Burn main's `with_custom_checkpointers(model, optim, scheduler)`.

        Three checkpointers written to Burn's `Checkpointer` trait (`save(epoch, record)`,
        `delete(epoch)`, `restore(epoch)`): each epoch checkpoint's model, optimizer and
        scheduler records go to them, the loop's own state to burnish's committed directory
        (see `CustomCheckpointers`). Or three recorders: one per part of burnish's checkpoint
        (the EMA weights use `model`'s), still one atomic commit.

        Raises:
            TypeError: if the three are neither all checkpointers nor all recorders.
        """
        from burnish.train.checkpoint.base import is_checkpointer
        from burnish.train.checkpoint.custom import check_checkpointers
        from burnish.train.checkpoint.part_recorders import PartRecorders

        parts = (model, optim, scheduler)
        if any(is_checkpointer(part) for part in parts):
            check_checkpointers(*parts)
            return self._set("checkpointing", recorder=None, checkpointers=parts)
        recorders = PartRecorders(model=model, optim=optim, scheduler=scheduler)
        return self._set("checkpointing", recorder=recorders, checkpointers=None)

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> Self:
        """Which epoch checkpoints to keep (default: last 2 + best valid loss)."""
        return self._set("checkpointing", retention=strategy)

    def checkpoint(self, epoch: int | Literal["latest"]) -> Self:
        """Resume from the checkpoint of `epoch`, or `"latest"` (fails if there is none)."""
        if epoch == ResumeFrom.LATEST.value:
            return self._set("checkpointing", resume_from=ResumeFrom.LATEST)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(
                "`checkpoint` takes an epoch (an integer >= 1) or 'latest'. "
                f"Received: checkpoint={epoch!r}."
            )
        return self._set("checkpointing", resume_from=epoch)

    def resume(self) -> Self:
        """Continue from the newest complete checkpoint, exactly; start fresh if there is none."""
        return self._set("checkpointing", resume_from=ResumeFrom.AUTO)

    def checkpoint_every(self, iterations: int) -> Self:
        """Also commit a checkpoint every `iterations` training iterations (crash safety)."""
        return self._set("checkpointing", every=iterations)

"""The step budget (`max_iterations(n)`): training ends after n optimizer steps.

Steps are counted over the whole run in `TrainingState.optimizer_steps` (checkpointed, so a
resume continues the count): one per iteration without gradient accumulation, one per group of
`k` iterations with `grads_accumulation(k)`. The budget never lets the loop draw a batch once
it is spent, so the last iteration trained is the one of the n-th optimizer step and no group
of accumulated gradients is left open. The epoch it ends is then closed as any epoch is
(validation, early stopping, the epoch checkpoint recording the end, the summary).

Without `num_epochs`, the run has as many epochs as the budget needs, computed from where the
run stands and the batches per epoch, so the dashboard shows a true `epoch i/N`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from burnish.train.components.component import Component
from burnish.train.loop.position import Phase

if TYPE_CHECKING:
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.state import TrainingState

__all__ = ["StepBudget"]

_END = object()


class StepBudget(Component):
    """When the run ends: after `num_epochs` epochs or `max_iterations` optimizer steps.

    Args:
        num_epochs: the epochs to train; None: as many as `max_iterations` needs.
        max_iterations: the optimizer steps to take; None: no step budget.
        accumulation: iterations per optimizer step (`grads_accumulation`), None for 1.
    """

    def __init__(
        self, num_epochs: int | None, max_iterations: int | None, accumulation: int | None = None
    ) -> None:
        if num_epochs is None and max_iterations is None:
            raise ValueError("A run needs `num_epochs`, `max_iterations` or both.")
        self.num_epochs = num_epochs
        self.max_iterations = max_iterations
        self.accumulation = accumulation or 1
        self.state: TrainingState | None = None

    def bind(self, run: LoopView) -> None:
        self.state = run.state

    def spent(self) -> bool:
        """Whether the run has taken every optimizer step of its budget."""
        return self.max_iterations is not None and self._state().optimizer_steps >= (
            self.max_iterations
        )

    def batches(self, batches: Iterator[Any]) -> Iterator[Any]:
        """`batches`, ending before the first one drawn once the budget is spent."""
        if self.max_iterations is None:
            return batches
        return self._until_spent(batches)

    def _until_spent(self, batches: Iterator[Any]) -> Iterator[Any]:
        while not self.spent():
            batch = next(batches, _END)
            if batch is _END:
                return
            yield batch

    def epochs(self, planned: int, batches_per_epoch: int) -> int:
        """The run's last epoch (see `last_epoch`)."""
        return self.last_epoch(self._state(), batches_per_epoch)

    def _state(self) -> TrainingState:
        assert self.state is not None, "StepBudget.bind(run) comes before the run starts"
        return self.state

    def last_epoch(self, state: TrainingState, batches_per_epoch: int) -> int:
        """The last epoch of the run: `num_epochs`, or the epoch the budget runs out in.

        Counted from where `state` stands (a resume, another world size): the iterations the
        remaining steps need, against what is left of the current epoch, then whole epochs of
        `batches_per_epoch`. With both set, the smaller.

        Raises:
            ValueError: if the budget alone bounds the run and an epoch has no batch.
        """
        if self.max_iterations is None:
            assert self.num_epochs is not None
            return self.num_epochs
        if batches_per_epoch < 1 and self.num_epochs is None:
            raise ValueError(
                f"`max_iterations({self.max_iterations})` counts optimizer steps, but the "
                "training data loader yields no batch per epoch (this rank's share, under "
                "torchrun). Give it data, or bound the run with `num_epochs(n)`."
            )
        position = state.position
        remaining = self.max_iterations - state.optimizer_steps
        iterations = remaining * self.accumulation - state.accumulation.count
        per_epoch = max(batches_per_epoch, 1)  # empty epochs: the bound is `num_epochs`
        left = per_epoch - position.iteration if position.phase is Phase.TRAIN else 0
        more = max(0, -(-(iterations - left) // per_epoch))
        needed = position.epoch + more
        return needed if self.num_epochs is None else min(needed, self.num_epochs)

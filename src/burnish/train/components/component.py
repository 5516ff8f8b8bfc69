"""The one interface of the loop's features: `Component`.

A feature of the loop (EMA, the non-finite guard, the step budget, validation inside an epoch,
preemption, experiment tracking, listeners, early stopping, ...) is a `Component`: the loop
tells it its events, asks it its decisions, and records its state with the checkpoint. The loop
(`Run`, loop/run.py) holds them as one `Components` list (components/dispatch.py, built by
components/registry.py) and names none of them. Every method has a neutral default: a component
overrides the ones it needs.

Events, in the order of a fit (README.md draws them in place):

    bind(run)                   once, when the fit's parts are built: the loop's view of the
                                fit (loop_view.py: state, options, processor, announcer, ...)
    held()                      the fit's length: signal handlers, trackers to close
    fit_start(resumed)          after the checkpoint is restored, before the first epoch
    after_optimizer_step(model, scaler)   each optimizer step (before the scaler's update)
    iteration_end(split, metadata, values)   each iteration, after its metrics
    validation_start(epoch_end)           a validation begins (inside an epoch or at its end)
    split_end(split, epoch, values)       a split's epoch closes: `values` are its epoch
                                          values, and a component may `run.log` more here
    validation_end(epoch_end)             the validation is done and counted
    validation_interrupted()              it was cut short (redone in full on resume)
    before_checkpoint()                   a checkpoint is about to be taken
    checkpoint(point, path, step)         one was committed (rank 0, once written)
    result(result)                        what the component adds to the run's result
                                          (also for a resumed run that had ended)
    fit_end(result)                       the epochs are over; every checkpoint committed;
                                          told in reverse order, as a teardown

Decisions the loop asks (the answers of all components combine: any stop wins, the planned
epochs, the batches and the step pass through each in turn):

    epochs(planned, batches_per_epoch)    the run's last epoch
    batches(batches)                      the train split's batches
    spent()                               the run's work is done (no batch more)
    validation_due(iteration, last)       a validation follows this iteration
    checkpoint_point(epoch_end)           the name of the checkpoint after a validation
    should_stop(validation)               stop after validation N (early stopping)
    halted()                              end now, with no checkpoint more
    may_checkpoint()                      a checkpoint may be taken now
    valid_model(model)                    what validation runs instead of `model.valid()`
    guard_step(step)                      wrap the optimizer step

Records: `to_record()` goes in the checkpoint's `learner` record under `key` (None: nothing
to record; with `file`, in a file of its own named `key`, loaded after the model), and
`load_record(record, changed)` gets it back (None when the checkpoint has none; `changed`
collects what the component had to start afresh, one line each, said on resume).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from pathlib import Path

    from torch import nn

    from burnish.optim import GradientsParams, GradScaler, Optimizer
    from burnish.train.checkpoint.file import CheckpointId
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.result import TrainingResult
    from burnish.train.metric.base import MetricMetadata
    from burnish.train.split import Split

__all__ = ["Component", "OptimizerStep"]

OptimizerStep = Callable[["Optimizer", float, "nn.Module", "GradientsParams"], "nn.Module"]
"""`optim.step(lr, model, grads)` as a function of the optimizer: returns the stepped model."""


class Component:
    """A feature of the training loop; see the module's text for its events and decisions."""

    key: ClassVar[str | None] = None
    """Its record's key in the checkpoint's `learner` record; None: it records nothing."""

    file: ClassVar[bool] = False
    """Whether its record is a file of the checkpoint of its own (weights), not in `learner`."""

    # -- events ----------------------------------------------------------------------------

    def bind(self, run: LoopView) -> None:
        """The fit this component serves (its parts are built; nothing has run yet): read only
        what `LoopView` names."""

    def held(self) -> contextlib.AbstractContextManager[Any]:
        """What the component holds for the fit's whole length (entered before the restore,
        left however the fit ends)."""
        return contextlib.nullcontext()

    def fit_start(self, resumed: bool) -> None:
        """The run starts (or continues, `resumed`) training."""

    def after_optimizer_step(self, model: nn.Module, scaler: GradScaler | None) -> None:
        """An optimizer step was taken on `model` (with a loss scaler: before its update)."""

    def iteration_end(
        self, split: Split, metadata: MetricMetadata, values: Mapping[str, float] | None
    ) -> None:
        """An iteration of `split` ended; `values`: its metrics read back, or None."""

    def validation_start(self, epoch_end: bool) -> None:
        """A validation begins: at the epoch's end, or inside it (`epoch_end` False)."""

    def split_end(self, split: Split, epoch: int, values: MutableMapping[str, float]) -> None:
        """The epoch of `split` (its log's `epoch`: validation N for the valid split) closes
        with `values`; values logged now (`run.log`) join them."""

    def validation_end(self, epoch_end: bool) -> None:
        """The validation is done and counted (`state.validations`)."""

    def validation_interrupted(self) -> None:
        """The validation was cut short: the resumed run redoes it in full."""

    def before_checkpoint(self) -> None:
        """A checkpoint of the current position is about to be taken."""

    def checkpoint(self, point: CheckpointId, path: Path, step: int | None) -> None:
        """Checkpoint `point` was committed at `path` (rank 0, on the loop's thread, once its
        background write committed); `step`: the global step it was taken at."""

    def result(self, result: TrainingResult) -> None:
        """Add what the component contributes to the run's `result` (e.g. the average)."""

    def fit_end(self, result: TrainingResult) -> None:
        """The epochs are over and every checkpoint committed; `result` may be completed."""

    # -- decisions -------------------------------------------------------------------------

    def epochs(self, planned: int, batches_per_epoch: int) -> int:
        """The run's last epoch, given the `planned` one."""
        return planned

    def batches(self, batches: Iterator[Any]) -> Iterator[Any]:
        """The train split's batches from the current position."""
        return batches

    def spent(self) -> bool:
        """Whether the run's work is done: no batch is drawn after it."""
        return False

    def validation_due(self, iteration: int, last_iteration: bool) -> bool:
        """Whether a validation follows train `iteration` (`last_iteration`: the epoch's own
        validation follows anyway)."""
        return False

    def checkpoint_point(self, epoch_end: bool) -> CheckpointId | None:
        """The name of the checkpoint taken after the validation just done; None: the epoch's."""
        return None

    def should_stop(self, validation: int) -> bool:
        """Whether the run stops after validation N (epoch N without `valid_every`)."""
        return False

    def halted(self) -> bool:
        """Whether the run ends now, with no checkpoint more (the last committed one stays)."""
        return False

    def may_checkpoint(self) -> bool:
        """Whether a checkpoint may be taken now (the component may read values back first)."""
        return True

    def valid_model(self, model: nn.Module) -> Any:
        """What validation runs instead of `model.valid()` (a `ValidStep`); None: that."""
        return None

    def guard_step(self, step: OptimizerStep) -> OptimizerStep:
        """The optimizer step, wrapped (e.g. skipped on a non-finite gradient)."""
        return step

    # -- records ---------------------------------------------------------------------------

    def to_record(self) -> Any:
        """The component's state for the checkpoint (with `key`)."""
        return None

    def load_record(self, record: Any, changed: list[str]) -> None:
        """Continue from `to_record()`'s record (None: the checkpoint has none)."""

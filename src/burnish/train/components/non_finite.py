"""What a non-finite loss or gradient does to a run (`on_non_finite`).

Nothing here reads the device during an iteration. The training loss of each iteration (and,
with `"skip"` or `"stop"`, the flag of its optimizer step) waits on the device with the
metrics' pending entries and comes back in the same transfer, when the metrics processor drains
them (at the renderer's pace, every 32 iterations at most, at the epoch's end and before a
checkpoint); the values are then looked at on the host.

* every mode: the first non-finite loss read back is said once, on the console (the
  renderer's `message`) and in `experiment.log`, with its epoch and iteration;
* `"continue"` (Burn's): training goes on;
* `"skip"`: an optimizer step whose gradients hold an inf or a NaN is skipped on the device
  (`burnish.optim.NonFiniteGuard`, the fused found-inf check of the float16 loss scaler);
  the train split's `Skipped Steps` metric counts them;
* `"stop"`: steps are guarded as with `"skip"`, and the run ends at the read-back that shows a
  non-finite loss or a skipped step, without writing another checkpoint: the last committed
  one holds finite weights, and `resume()` continues from it.

Under float16 mixed precision the loss scaler already skips steps with inf/NaN gradients (and
lowers its scale): that skip is the guard, and its routine overflows neither stop a run nor
are said; `"skip"` counts them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args

import torch
from torch import Tensor, nn

from burnish.optim.non_finite import NonFiniteGuard
from burnish.train.components.component import Component, OptimizerStep
from burnish.train.metric.loss import LossInput
from burnish.train.metric.skipped_steps import SkippedStepsMetric
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.optim import GradientsParams, GradScaler, Optimizer
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.result import TrainingResult
    from burnish.train.metric.base import Metric, MetricMetadata

__all__ = ["NonFiniteMode", "NonFiniteWatch", "check_non_finite_mode", "loss_of"]

NonFiniteMode = Literal["continue", "skip", "stop"]
M = TypeVar("M", bound=nn.Module)
_ADVICE = "a lower learning rate, gradient clipping, or on_non_finite('skip')"


def check_non_finite_mode(mode: Any) -> NonFiniteMode:
    """`mode` if it is one of the modes.

    Raises:
        ValueError: for anything else.
    """
    if mode not in get_args(NonFiniteMode):
        raise ValueError(
            "`on_non_finite` must be 'continue' (train on, Burn's behaviour), 'skip' (skip "
            "optimizer steps whose gradients are inf or NaN) or 'stop' (end the run at the "
            f"next read-back). Received: on_non_finite={mode!r}."
        )
    return cast(NonFiniteMode, mode)


@dataclasses.dataclass
class _Iteration:
    """One training iteration's values waiting on the device."""

    epoch: int
    iteration: int
    loss: Tensor | None
    skipped: Tensor | None


class NonFiniteWatch(Component):
    """The run's guard against inf/NaN: guarded optimizer steps, and the read-back check.

    Args:
        mode: `"continue"`, `"skip"` or `"stop"`.
        scaled: whether a float16 loss scaler steps the optimizer (it skips by itself).
        say: tells the user (console and experiment log); None on ranks other than 0.
        metrics: the train split's metrics; a `SkippedStepsMetric` among them is fed the
            flags of the steps.
    """

    def __init__(
        self,
        mode: NonFiniteMode,
        *,
        scaled: bool = False,
        say: Callable[[str], None] | None = None,
        metrics: Sequence[Metric] = (),
    ) -> None:
        self.run: LoopView | None = None
        self.mode = check_non_finite_mode(mode)
        self.guard = NonFiniteGuard() if mode != "continue" and not scaled else None
        self.say = say
        self.stop_requested = False
        self.stopped_at: tuple[int, int] | None = None
        self._step_flag: Tensor | None = None  # the last optimizer step's, until `note`
        self._current: Tensor | None = None  # the flag of the iteration being processed
        self._pending: list[_Iteration] = []
        self._loss_said = False
        self._skip_said = False
        for metric in metrics:
            if isinstance(metric, SkippedStepsMetric):
                metric.source = self.current_flag

    # -- the loop's component --------------------------------------------------------------

    def bind(self, run: LoopView) -> None:
        self.run = run

    def guard_step(self, step: OptimizerStep) -> OptimizerStep:
        """With `"skip"`/`"stop"` (and no loss scaler), the optimizer step skipped on the
        device if a gradient is inf or NaN."""
        return step if self.guard is None else self.step

    def after_optimizer_step(self, model: nn.Module, scaler: GradScaler | None) -> None:
        if scaler is not None:
            self.scaled_step(scaler)

    def halted(self) -> bool:
        """`"stop"` saw a non-finite value: the run ends with no checkpoint more."""
        return self.stop_requested

    def may_checkpoint(self) -> bool:
        """With `"stop"`, everything pending is read back first (a collective with several
        ranks), and a non-finite value there writes no checkpoint: the last committed one
        keeps finite weights."""
        if self.mode == "stop" and self.run is not None:
            self.run.processor.flush(self.run.state.position.epoch)
        return not self.stop_requested

    def fit_end(self, result: TrainingResult) -> None:
        """Say where `"stop"` ended the run and how to continue (every checkpoint committed)."""
        if self.stop_requested and self.run is not None and self.run.context.is_main:
            self.run.announce.warning(
                self.stop_message(self.run.options.checkpointing.checkpointer)
            )

    # -- the optimizer step ------------------------------------------------------------------

    def step(self, optim: Optimizer, lr: float, model: M, grads: GradientsParams) -> M:
        """The optimizer step; with `"skip"`/`"stop"`, skipped on the device if a gradient is
        inf or NaN."""
        if self.guard is None:
            return optim.step(lr, model, grads)
        model, self._step_flag = self.guard.step(optim, lr, model, grads)
        return model

    def scaled_step(self, scaler: GradScaler) -> None:
        """After `scaler.step` (before `scaler.update`): with `"skip"`, keep the scaler's flag
        for the `Skipped Steps` metric."""
        if self.mode == "skip":
            self._step_flag = scaler.found_inf.clone()

    # -- the metrics processor's watcher (report/watcher.py) -----------------------------------

    def note(self, split: Split, row: int, item: Any, metadata: MetricMetadata) -> None:
        """Keep a training iteration's loss (and step flag) for the next read-back; called by
        the metrics processor before it updates the metrics."""
        if split is not Split.TRAIN:
            return
        flag, self._step_flag = self._step_flag, None
        self._current = flag
        watched = flag if self.guard is not None else None
        loss = loss_of(item)
        if loss is not None or watched is not None:
            self._pending.append(_Iteration(metadata.epoch, metadata.iteration, loss, watched))

    def current_flag(self) -> Tensor | None:
        """The step flag of the iteration being processed (None: no optimizer step)."""
        return self._current

    def pending(self, split: Split = Split.TRAIN) -> list[Tensor]:
        """The device values to read back with the metrics' pending entries, in order."""
        if split is not Split.TRAIN:
            return []
        return [
            value
            for seen in self._pending
            for value in (seen.loss, seen.skipped)
            if value is not None
        ]

    def drained(
        self,
        split: Split,
        names: Sequence[str] = (),
        rows: Sequence[float] = (),
        own: Sequence[float] = (),
    ) -> None:
        """Look at the host values of `pending()` (`own`, over all ranks); say and decide."""
        if split is not Split.TRAIN:
            return
        host = iter(own)
        for seen in self._pending:
            loss = next(host) if seen.loss is not None else 0.0
            skipped = next(host) if seen.skipped is not None else 0.0
            if not math.isfinite(loss):
                self._non_finite_loss(seen, loss)
            if skipped:
                self._skipped_step(seen)
        self._pending.clear()

    def forget(self, split: Split) -> None:
        """Drop the pending values (the epoch's entries are forgotten)."""
        if split is Split.TRAIN:
            self._pending.clear()

    # -- decisions -----------------------------------------------------------------------------

    def _non_finite_loss(self, seen: _Iteration, loss: float) -> None:
        if not self._loss_said:
            self._loss_said = True
            self._tell(
                f"Non-finite loss ({loss}) at epoch {seen.epoch}, iteration {seen.iteration}. "
                + _AFTER_LOSS[self.mode]
            )
        if self.mode == "stop":
            self._stop(seen)

    def _skipped_step(self, seen: _Iteration) -> None:
        where = f"epoch {seen.epoch}, iteration {seen.iteration}"
        if self.mode == "stop":
            if not self.stop_requested:
                self._tell(
                    f"Non-finite gradient at {where}: its optimizer step was skipped, and the "
                    "run stops (on_non_finite('stop'))."
                )
            self._stop(seen)
        elif not self._skip_said:
            self._skip_said = True
            self._tell(
                f"Skipped the optimizer step of {where}: a gradient is inf or NaN "
                "(on_non_finite('skip')). The `Skipped Steps` metric counts every skipped "
                "step; only this first one is reported here."
            )

    def _stop(self, seen: _Iteration) -> None:
        if not self.stop_requested:
            self.stop_requested = True
            self.stopped_at = (seen.epoch, seen.iteration)

    def _tell(self, text: str) -> None:
        if self.say is not None:
            self.say(text)

    def stop_message(self, checkpointer: FileCheckpointer | None) -> str:
        """What the user reads when `"stop"` ended the run: where, and how to resume."""
        epoch, iteration = self.stopped_at or (0, 0)
        head = (
            f"Training stopped after a non-finite value at epoch {epoch}, iteration {iteration} "
            "(on_non_finite('stop')); no checkpoint was written after it."
        )
        if checkpointer is None:
            return (
                f"{head} This run writes no checkpoints: it must start again (add "
                "`with_file_checkpointer(recorder)` and `resume()` to continue a run instead)."
            )
        committed = checkpointer.committed()
        if not committed:
            return (
                f"{head} No checkpoint had been committed in {checkpointer.directory}: fix the "
                f"cause ({_ADVICE}) and train again; `resume()` starts from the beginning."
            )
        newest = checkpointer.directory / committed[-1].name
        return (
            f"{head} The last committed checkpoint, {newest}, holds finite weights: fix the "
            f"cause ({_ADVICE}) and build the learner again with `.resume()` on the same "
            "artifact directory to continue from it."
        )


_AFTER_LOSS = {
    "continue": (
        "Training continues (on_non_finite('continue'), Burn's behaviour); the parameters may "
        "be NaN from here on. on_non_finite('skip') skips the optimizer steps whose gradients "
        "are inf or NaN, on_non_finite('stop') ends the run. Later non-finite losses are not "
        "reported again."
    ),
    "skip": (
        "Optimizer steps whose gradients are inf or NaN are skipped (on_non_finite('skip')) "
        "and counted in the `Skipped Steps` metric. Later non-finite losses are not reported "
        "again."
    ),
    "stop": "The run stops (on_non_finite('stop')).",
}


def loss_of(item: Any) -> Tensor | None:
    """The training loss an item carries (its `LossInput`, or a `loss` tensor), detached and
    0-dim; None if it has none. Queues no kernel for a 0-dim loss; never syncs."""
    if isinstance(item, LossInput):
        loss: Any = item.loss
    else:
        method = getattr(item, "adapt", None)
        data = method(LossInput) if callable(method) else None
        loss = data.loss if isinstance(data, LossInput) else getattr(item, "loss", None)
    if not isinstance(loss, torch.Tensor):
        return None
    loss = loss.detach()
    return loss if loss.dim() == 0 else loss.sum()

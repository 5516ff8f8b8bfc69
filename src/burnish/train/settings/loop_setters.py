"""`LoopSetters`: how long the loop runs, when it validates, and how its optimizer steps are
made (epochs, step budget, validation, accumulation, early stopping, stop requests,
preemption, EMA, non-finite steps)."""

from __future__ import annotations

import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

from burnish.train.settings.setters import Setters

if TYPE_CHECKING:
    from typing_extensions import Self

    from burnish.train.components.early_stopping import EarlyStoppingStrategy
    from burnish.train.components.ema import EmaBuffers, EmaValidate
    from burnish.train.components.non_finite import NonFiniteMode
    from burnish.train.interrupter import Interrupter
    from burnish.train.loop.accumulation import LrStep

__all__ = ["LoopSetters"]


class LoopSetters(Setters):
    """The loop's setters of `TrainingBuilder`."""

    def num_epochs(self, num_epochs: int) -> Self:
        """How many epochs to train (1-based, inclusive); default 1.

        With `max_iterations(n)` it is an upper bound: the run ends at whichever comes first.
        """
        return self._set("stopping", num_epochs=num_epochs)

    def max_iterations(self, iterations: int) -> Self:
        """End training after `iterations` optimizer steps, in whatever epoch (a step budget).

        Steps are counted over the whole run (a resume continues the count) and are optimizer
        steps: with `grads_accumulation(k)`, `k` batches make one. The epoch the budget ends is
        cut short and closed as any epoch is: its validation, early stopping's decision, the
        epoch checkpoint (recording the end: `resume()` then trains nothing) and the summary.
        A learning-rate schedule of `iterations` steps (with `lr_step="optimizer_step"` under
        accumulation) ends exactly there.

        `num_epochs` becomes an upper bound; left unset, it is as many epochs as the budget
        needs (`ceil(iterations * accumulation / batches per epoch)`), so the budget ends the
        run. Raising the budget of an ended run and calling `resume()` continues with the next
        epoch. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").max_iterations(10_000).valid_every(1_000)
        """
        return self._set("stopping", max_iterations=iterations)

    def valid_every(self, iterations: int) -> Self:
        """Also validate every `iterations` optimizer steps, inside the epochs.

        A validation runs when the run's optimizer step count (see `max_iterations`) is a
        multiple of `iterations`, and at each epoch's end as always (once, when both fall on
        the same step). Each validation is logged as its own `valid/epoch-N` directory (Burn's
        layout; N counts validations, `valid/validations.json` says where each one was taken),
        and checkpointing strategies and early stopping decide after every validation: their
        epochs are then validations (`no_improvement_since(n_epochs=3)`: 3 validations), and
        they must watch valid metrics. A validation restores `model.train()` and leaves the
        random generators as they were, so training goes on exactly as without it.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").valid_every(500)
        """
        return self._set("validation", every=iterations)

    def grads_accumulation(self, accumulation: int, lr_step: LrStep = "iteration") -> Self:
        """Step the optimizer once every `accumulation` iterations with summed gradients.

        Args:
            accumulation: iterations (batches) per optimizer step.
            lr_step: when the learning-rate scheduler advances. `"iteration"` (the default,
                as Burn's learner): once per batch, so a schedule of `num_iters` lasts
                `num_iters` batches, `num_iters / accumulation` optimizer steps.
                `"optimizer_step"`: once per optimizer step (the rate of a group's first
                iteration is used for the whole group), for a schedule built in optimizer
                steps, as `torch.optim.lr_scheduler` loops and Hugging Face's Trainer count.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts")
            >>> builder = builder.grads_accumulation(4, lr_step="optimizer_step")
        """
        return self._set("optimization", grads_accumulation=accumulation, lr_step=lr_step)

    def interrupter(self) -> Interrupter:
        """The interrupter of this run: call `.stop()` on it to stop after the current step."""
        return self._settings.stopping.interrupter

    def with_interrupter(self, interrupter: Interrupter) -> Self:
        """Use a given interrupter (e.g. shared with a UI)."""
        return self._set("stopping", interrupter=interrupter)

    def early_stopping(self, strategy: EarlyStoppingStrategy) -> Self:
        """Stop when `strategy.should_stop(epoch, store)` says so (after each epoch)."""
        return self._set("stopping", early_stopping=strategy)

    def with_ema(
        self,
        decay: float,
        *,
        warmup: bool = False,
        warmup_power: float = 2 / 3,
        update_every: int = 1,
        buffers: EmaBuffers = "average",
        validate: EmaValidate = "ema",
    ) -> Self:
        """Keep an exponential moving average (EMA) of the weights while training.

        After every `update_every`-th optimizer step, `ema = decay * ema + (1 - decay) * model`
        for each parameter and floating-point buffer, in one multi-tensor kernel on the
        model's device (no host sync). Validation runs on the average unless `validate` says
        otherwise; `TrainingResult.ema` is the averaged model; every checkpoint holds the
        average and `resume()` continues it exactly. See docs/long-runs.md.

        Example:
            >>> from burnish.train import LearnerBuilder
            >>> builder = LearnerBuilder("artifacts").with_ema(0.999, validate="both")

        Args:
            decay: the weight of the old average at each update, in [0, 1) (0.999 and
                0.9999 are usual; the average spans about `1 / (1 - decay)` updates).
            warmup: start with a smaller decay that grows to `decay`, as timm's `ModelEmaV3`:
                `min(decay, 1 - n ** -warmup_power)` at the n-th update.
            warmup_power: the warm-up's power (2/3: decay 0.999 after ~31.6k updates; 3/4:
                after ~10k).
            update_every: average after every this many optimizer steps (cheaper; the decay
                is per update).
            buffers: `"average"` floating-point buffers (BatchNorm statistics) like the
                parameters, or `"copy"` the model's. Integer buffers are always copied.
            validate: `"ema"` (validate the average), `"model"` (the trained weights) or
                `"both"`: the metrics on the average, and a `Raw <name>` twin of each numeric
                validation metric on the trained weights, logged beside it.

        Raises:
            ValueError: for a decay outside [0, 1) or another unknown value; at `build`,
                with `strategy("fsdp")`.
        """
        from burnish.train.components.ema import EmaSettings

        ema = EmaSettings(decay, warmup, warmup_power, update_every, buffers, validate)
        return self._set("optimization", ema=ema)

    def on_non_finite(self, mode: NonFiniteMode) -> Self:
        """What an inf or NaN loss or gradient does to the run.

        Whatever the mode, the first non-finite training loss read back is said once on the
        console and in `experiment.log`, with its epoch and iteration. The losses come back
        with the metrics' batched read-back: no extra host sync.

        Args:
            mode: `"continue"` (the default, Burn's): train on. `"skip"`: an optimizer step
                whose gradients hold an inf or a NaN is skipped on the device (the fused
                found-inf check of the float16 loss scaler), and the train split's
                `Skipped Steps` metric counts them. `"stop"`: steps are guarded as with
                `"skip"`, and the run ends at the next read-back that shows a non-finite loss
                or a skipped step, writing no further checkpoint; the message names the last
                committed checkpoint, which `resume()` continues from.

        Raises:
            ValueError: for another mode; at `build`, `"skip"`/`"stop"` with
                `strategy("fsdp")` or `compile(step=True)`.
        """
        from burnish.train.components.non_finite import check_non_finite_mode

        return self._set("optimization", on_non_finite=check_non_finite_mode(mode))

    def preemption(
        self,
        signals: Sequence[signal.Signals | int | str] | None = None,
        requeue: bool = False,
        exit_code: int | None = None,
    ) -> Self:
        """What a preemption signal does (by default SIGTERM is caught, without this call).

        While `fit` runs, the first of `signals` stops the run at the next iteration boundary
        (in training or validation), commits a checkpoint of that exact position (an
        asynchronous write in flight is finished first), says so on the console and in
        `experiment.log`, and raises `burnish.train.Preempted`, a `SystemExit` with
        `exit_code`: the code after `fit` does not run, and `.resume()` continues exactly.
        A second signal ends the process at once. With several ranks, a signal that reaches
        any rank stops every rank at the same iteration, within `sync_every` iterations
        (see docs/crash-safety.md, "Preemption").

        Args:
            signals: the signals to catch (e.g. `[signal.SIGUSR1]` or `["SIGTERM",
                "SIGUSR1"]`); `[]` switches preemption handling off; None: SIGTERM.
            requeue: after the checkpoint commits, rank 0 runs `scontrol requeue
                $SLURM_JOB_ID` (when `SLURM_JOB_ID` is set).
            exit_code: the process's exit code; None: 128 + the signal's number (143 for
                SIGTERM).

        Raises:
            ValueError: for SIGKILL, SIGSTOP or SIGINT (Ctrl-C has its own graceful stop),
                something that is not a signal, or an exit code outside 0..255.
        """
        from burnish.train.components.preemption import preemption_settings

        return self._set("stopping", preemption=preemption_settings(signals, requeue, exit_code))

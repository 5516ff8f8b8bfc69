"""Preemption: a signal such as SIGTERM stops the run with a checkpoint of its exact position.

Schedulers that take a machine back (SLURM's `scancel` and `--signal`, spot instances,
Kubernetes evictions, `docker stop`) send SIGTERM, or a chosen signal, and SIGKILL a grace
period later. While `fit` runs, `PreemptionWatch.catch` turns the first such signal into a stop
request on the run's interrupter: the loop stops at the next iteration boundary, in training or
in validation (a validation cut short is redone in full on resume), and commits a checkpoint of
that position (the Ctrl-C path; an asynchronous write in flight is finished first). With
several ranks the ranks agree on the stop every `sync_every` iterations, so a signal that
reaches one rank stops them all at the same iteration. Then `finish` says once what happened,
requeues a SLURM job if asked, and raises `Preempted` (a `SystemExit` with the chosen exit
code), so the code after `fit` does not run as if training had finished. A second signal ends
the process at once; the last committed checkpoint stays intact (commits are atomic).
An `Evaluator` catches SIGTERM too: it stops after the current batch and raises `Preempted`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from burnish.data.dataloader.worker_signals import ignored_in_workers
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.components.component import Component

if TYPE_CHECKING:
    from burnish.train.components.loop_view import LoopView
    from burnish.train.interrupter import Interrupter
    from burnish.train.loop.position import Position
    from burnish.train.loop.result import TrainingResult
    from burnish.train.parallel.distributed import DistributedContext
    from burnish.train.report.announce import Announcer

__all__ = ["Preempted", "PreemptionSettings", "PreemptionWatch", "preemption_settings"]

log = logging.getLogger("burnish.train")

_UNCATCHABLE = {signal.SIGKILL, signal.SIGSTOP}


@dataclasses.dataclass(frozen=True)
class PreemptionSettings:
    """Which signals preempt a run and what it does then (`TrainingBuilder.preemption`).

    Attributes:
        signals: the signals caught while `fit` runs; empty: none (the default handlers).
        requeue: after the checkpoint commits, rank 0 runs `scontrol requeue $SLURM_JOB_ID`
            (when `SLURM_JOB_ID` is set).
        exit_code: the code `Preempted` exits the process with; None: 128 + the signal's
            number (143 for SIGTERM, what a shell reports for a process SIGTERM killed).
    """

    signals: tuple[signal.Signals, ...] = (signal.SIGTERM,)
    requeue: bool = False
    exit_code: int | None = None


def preemption_settings(
    signals: Sequence[signal.Signals | int | str] | None, requeue: bool, exit_code: int | None
) -> PreemptionSettings:
    """Checked `PreemptionSettings`; `signals=None` means SIGTERM.

    Raises:
        ValueError: for a signal that is not one, cannot be caught, or is SIGINT.
    """
    chosen = (signal.SIGTERM,) if signals is None else tuple(_signal(s) for s in signals)
    if isinstance(exit_code, bool) or not (exit_code is None or 0 <= exit_code <= 255):
        raise ValueError(
            "`preemption(exit_code=...)` must be an integer from 0 to 255, or None for 128 + "
            f"the signal's number. Received: exit_code={exit_code!r}."
        )
    return PreemptionSettings(tuple(dict.fromkeys(chosen)), bool(requeue), exit_code)


def _signal(value: signal.Signals | int | str) -> signal.Signals:
    try:
        if isinstance(value, str):
            name = value.upper()
            chosen = signal.Signals[name if name.startswith("SIG") else f"SIG{name}"]
        else:
            chosen = signal.Signals(value)
    except (KeyError, ValueError):
        raise ValueError(
            "`preemption(signals=...)` takes signals such as signal.SIGTERM, 15 or 'SIGUSR1'. "
            f"Received: {value!r}."
        ) from None
    if chosen in _UNCATCHABLE:
        raise ValueError(
            f"{chosen.name} cannot be caught, so it cannot preempt a run gracefully. Received: "
            f"signals containing {chosen.name}. Use SIGTERM or SIGUSR1 (and send SIGKILL after "
            "the grace period)."
        )
    if chosen == signal.SIGINT:
        raise ValueError(
            "SIGINT (Ctrl-C) already stops a run gracefully through its interrupter. Received: "
            "signals containing SIGINT. Leave it out of `preemption(signals=...)`."
        )
    return chosen


class Preempted(SystemExit):
    """Raised by `fit` (and `launch`) when a preemption signal stopped the run.

    The run's checkpoint of the position it stopped at is committed by then; the same script
    with `.resume()` continues from it exactly. As a `SystemExit`, uncaught it ends the process
    quietly with `code` (the builder's `exit_code`, by default 128 + the signal's number), and
    `except Exception` in user code does not swallow it.

    Attributes:
        code: the exit code.
        signal: the signal that arrived (on a rank that got none: the one another rank got).
        result: how the run ended (`interrupted` is True), as `fit` would have returned it;
            None when the signal came before the first iteration.
        checkpoint: the checkpoint directory written at the stop, None if none was.
        requeued: whether rank 0 requeued the SLURM job.
        results: raised by an `Evaluator`: the `EvaluationResult`s so far (the last one
            `interrupted`), else None.
    """

    def __init__(
        self,
        signal_: signal.Signals,
        code: int,
        result: TrainingResult | None,
        checkpoint: Path | None,
        requeued: bool = False,
        results: list[Any] | None = None,
    ) -> None:
        super().__init__(code)
        self.signal = signal_
        self.result = result
        self.results = results
        self.checkpoint = checkpoint
        self.requeued = requeued

    def __str__(self) -> str:
        return f"preempted by {self.signal.name} (exit code {self.code})"


class PreemptionWatch:
    """Catches the preemption signals during a run and ends the run after its checkpoint.

    Args:
        settings: the signals and what to do.
        interrupter: the run's interrupter, asked to stop when a signal arrives.
    """

    def __init__(self, settings: PreemptionSettings, interrupter: Interrupter) -> None:
        self.settings = settings
        self.interrupter = interrupter
        self.signal: signal.Signals | None = None
        self.arrived_at: float | None = None  # time.monotonic() of the first signal

    @contextlib.contextmanager
    def catch(self) -> Iterator[None]:
        """Install the handlers (main thread only) and restore the previous ones on leaving;
        data-loader workers started meanwhile ignore the signals."""
        signals = self.settings.signals
        if not signals or threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {number: signal.signal(number, self._handle) for number in signals}
        try:
            with ignored_in_workers(signals):
                yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.signal is not None:  # the second one: now (committed checkpoints are whole)
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
            os._exit(128 + number)  # a signal whose default is to be ignored
        self.signal = signal.Signals(number)
        self.arrived_at = time.monotonic()
        self.interrupter.stop(f"preempted ({self.signal.name})")

    def agreed(self, context: DistributedContext) -> signal.Signals | None:
        """The signal any rank got, on every rank (one collective with several ranks)."""
        number = context.largest(0 if self.signal is None else int(self.signal))
        return signal.Signals(number) if number else None

    def before_training(self, context: DistributedContext) -> None:
        """Before the first iteration: a signal during set-up ends the run with nothing written.

        Raises:
            Preempted: if a signal arrived (on any rank).
        """
        arrived = self.agreed(context) if self.settings.signals else None
        if arrived is None:
            return
        self.interrupter.reset()
        if context.is_main:
            log.warning("Preempted by %s during set-up: nothing was trained or written.", arrived)
        raise Preempted(arrived, self._code(arrived), None, None)

    def finish(
        self,
        result: TrainingResult,
        context: DistributedContext,
        checkpoint: Path | None,
        announce: Announcer,
        where: str,
    ) -> None:
        """After the run's checkpoints are committed: if a signal stopped the run, say so,
        requeue if asked, and raise `Preempted`.

        Raises:
            Preempted: if the run was stopped by a signal (on any rank).
        """
        if not result.interrupted or not self.settings.signals:
            return
        arrived = self.agreed(context)
        if arrived is None:
            return
        requeued = False
        if context.is_main:
            requeued = self._requeue(announce) if self.settings.requeue else False
            announce.warning(self._message(arrived, where, checkpoint, requeued))
        raise Preempted(arrived, self._code(arrived), result, checkpoint, requeued)

    def end_evaluation(self, context: DistributedContext, results: list[Any]) -> None:
        """After an evaluation a signal cut short (its logs cover the batches it did).

        Raises:
            Preempted: if a signal arrived (on any rank); `result` holds the evaluation
                results so far.
        """
        if not any(getattr(result, "interrupted", False) for result in results):
            return
        arrived = self.agreed(context)
        if arrived is None:
            return
        if context.is_main:
            log.warning("Evaluation preempted by %s: stopped after the current batch.", arrived)
        raise Preempted(arrived, self._code(arrived), None, None, results=results)

    def _code(self, arrived: signal.Signals) -> int:
        code = self.settings.exit_code
        return 128 + int(arrived) if code is None else code

    def _message(
        self, arrived: signal.Signals, where: str, checkpoint: Path | None, requeued: bool
    ) -> str:
        if checkpoint is None:
            saved = "no checkpointer, so nothing was saved (add `.with_file_checkpointer(...)`)"
        else:
            saved = f"checkpoint {checkpoint} committed"
            if self.arrived_at is not None:  # on the rank that got the signal
                saved += f" {time.monotonic() - self.arrived_at:.2f} s after the signal"
        then = "the SLURM job is requeued" if requeued else "run the same script again"
        return (
            f"Preempted by {arrived.name}: stopped at {where}; {saved}. To continue, {then} "
            f"with `.resume()` on the builder (exit code {self._code(arrived)})."
        )

    @staticmethod
    def _requeue(announce: Announcer) -> bool:
        """`scontrol requeue $SLURM_JOB_ID`; True if it succeeded."""
        job = os.environ.get("SLURM_JOB_ID")
        if not job:
            announce.warning("preemption(requeue=True): SLURM_JOB_ID is not set, not requeued.")
            return False
        try:
            done: Any = subprocess.run(
                ["scontrol", "requeue", job], capture_output=True, text=True, timeout=60
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            announce.warning(f"`scontrol requeue {job}` failed: {error}.")
            return False
        if done.returncode != 0:
            announce.warning(
                f"`scontrol requeue {job}` failed ({done.returncode}): {done.stderr.strip()}."
            )
            return False
        return True


class Preemption(Component):
    """Preemption as a component of the loop: the handlers held for the fit, a signal during
    set-up ends the run before anything is written, and one during training ends it after its
    checkpoint, with `Preempted` raised last (`fit_end` goes in reverse order).

    Args:
        watch: the signal handlers and the interrupter they stop.
        where: where the run stands, in words (a validation inside an epoch says so).
    """

    def __init__(self, watch: PreemptionWatch, where: Callable[[Position], str]) -> None:
        self.watch = watch
        self.where = where
        self.run: LoopView | None = None

    def bind(self, run: LoopView) -> None:
        self.run = run

    def held(self) -> contextlib.AbstractContextManager[None]:
        return self.watch.catch()

    def fit_start(self, resumed: bool) -> None:
        assert self.run is not None
        self.watch.before_training(self.run.context)

    def fit_end(self, result: TrainingResult) -> None:
        """If a signal stopped the run: say where, requeue if asked, and raise `Preempted`."""
        run = self.run
        assert run is not None
        position, checkpointer = run.state.position, run.options.checkpointing.checkpointer
        checkpoint = None
        if checkpointer is not None:
            point = CheckpointId(position.epoch, position.iteration)
            checkpoint = checkpointer.directory / point.name
        self.watch.finish(result, run.context, checkpoint, run.announce, self.where(position))

"""How an example ends when Ctrl-C (or `q` in the dashboard) stopped its training.

The Learner stops gracefully after the current iteration and returns a result with
`interrupted=True`: the model is half-trained and, where the run has a checkpointer, its last
checkpoint is the place to continue from. The examples then say so and exit with 130, the
status a shell gives a process that SIGINT ended, instead of going on as if training had
finished.

A run that `on_non_finite("stop")` ended also returns normally (`stopped_non_finite=True`):
the examples say so and exit with 1, so that a cluster's job is not read as a success.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from burnish.train import TrainingResult

__all__ = ["EXIT_INTERRUPTED", "EXIT_NON_FINITE", "exit_if_interrupted", "run_hand_written_loop"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
EXIT_NON_FINITE = 1  # a failure: the loss or the gradients went non-finite


def exit_if_interrupted(result: TrainingResult, not_done: str, resume: str | None) -> None:
    """Say what an interrupted run did and did not do, and exit with 130; return otherwise.

    Args:
        result: what `fit` returned.
        not_done: what the example skips, e.g. "no model.mpk was saved".
        resume: the command that continues the run from its checkpoint; None when the run
            cannot be resumed (no checkpointer): the message then says to run it again.

    Raises:
        SystemExit: with code 130 when `result.interrupted`, 1 when
            `result.stopped_non_finite`.
    """
    if result.stopped_non_finite:  # the learner's warning above names the last checkpoint
        print(
            f"Training stopped on a non-finite loss or gradient (on_non_finite('stop')) after "
            f"{result.iterations} iteration(s): {not_done}. Fix the cause, then "
            + (f"continue with: {resume}" if resume is not None else "run the example again."),
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(EXIT_NON_FINITE)
    if not result.interrupted:
        return
    where = Path(result.artifact_dir) if result.artifact_dir is not None else None
    lines = [
        f"Training was interrupted after {result.iterations} iteration(s) "
        f"({result.epochs_completed} epoch(s) finished): {not_done}."
    ]
    if result.summary is not None and where is not None:
        lines.append(
            "The Learner Summary above covers finished epochs only; every value logged so far: "
            f"burnish summary {where}"
        )
    if resume is not None:
        lines.append(f"Continue from the last checkpoint with: {resume}")
    else:
        lines.append("This run keeps no checkpoint to resume from: run the example again.")
    print("\n".join(lines), file=sys.stderr, flush=True)
    raise SystemExit(EXIT_INTERRUPTED)


def run_hand_written_loop(main: Callable[[], object], not_done: str) -> None:
    """Run a hand-written loop's `main`; Ctrl-C (no graceful stop there: a `KeyboardInterrupt`
    wherever it lands) ends with one line saying so instead of a traceback, and exit 130.

    Args:
        main: the example's `main`, called without arguments.
        not_done: what the interrupted loop leaves undone, e.g. "nothing was saved".
    """
    try:
        main()
    except KeyboardInterrupt:
        print(f"Interrupted (Ctrl-C): {not_done}.", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None

"""`burnish summary DIR [DIR ...]`: the LearnerSummary of a finished or interrupted run, from its
logs; of several runs, one table of each metric's final and best value in every run."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from burnish.cli.compare import ComparedRun, collect_runs, comparison_rows
from burnish.cli.html import number
from burnish.cli.remote import local_runs
from burnish.cli.run_data import learner_summary

__all__ = ["add_parser", "comparison_text", "learner_summary", "run"]


def add_parser(commands: Any) -> None:
    """Add the `summary` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "summary",
        help="the learner summary of a run, from its logs; several runs side by side",
        description="Print the min and max epoch value of every metric of a run (Burn's "
        "learner summary), read from <DIR>/train, <DIR>/valid and <DIR>/test: works for "
        "finished and interrupted runs. With several runs, one table of each metric's final "
        "and best value in every run.",
    )
    parser.add_argument(
        "directories",
        metavar="DIR",
        nargs="+",
        help="a run's artifact directory or its URL, e.g. s3://bucket/run (one or more)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the learner summary of the run `args.directories[0]`, read from its metric logs;
    of several runs, their comparison (`comparison_text`).

    Returns:
        0, the exit status.

    Raises:
        CommandError: if a directory is missing, not a directory, or holds no metric logs, or
            a run is given twice.
    """
    with local_runs(args.directories, checkpoints=False) as directories:
        if len(directories) == 1:
            print(learner_summary(directories[0]), end="")
            return 0
        print(comparison_text(collect_runs(directories)), end="")
    return 0


def comparison_text(runs: Sequence[ComparedRun]) -> str:
    """Several runs as text: the runs, then one row per metric, split and run.

    Example:
        ======================== Run Comparison ========================
        Runs: 2
          lr-0.01  artifacts/lr-0.01  (3 epochs)
          lr-0.1   artifacts/lr-0.1  (2 epochs)


        | Split | Metric   | Best is | Run     | Final   | Epoch | Best    | Epoch |
        |-------|----------|---------|---------|---------|-------|---------|-------|
        | Train | Accuracy | higher  | lr-0.01 | 91.25   | 3     | 91.25   | 3     |
        | Train | Accuracy | higher  | lr-0.1  | 88.5    | 2     | 89      | 1     |
        ...
    """
    width = max(len(_printable(run.name)) for run in runs)
    text = f"{'=' * 24} Run Comparison {'=' * 24}\nRuns: {len(runs)}\n"
    for run in runs:
        epochs = f"{run.summary.epochs} epoch{'s' if run.summary.epochs != 1 else ''}"
        text += f"  {_printable(run.name):<{width}}  {_printable(str(run.directory))}  ({epochs})\n"
    header = ["Split", "Metric", "Best is", "Run", "Final", "Epoch", "Best", "Epoch"]
    rows = []
    for row in comparison_rows(runs):
        direction = "lower" if row.lower_is_better else "higher"
        for run, outcome in zip(runs, row.outcomes):
            cells = [row.split, row.metric, direction, run.name]
            if outcome is None:
                cells += ["missing", "-", "-", "-"]
            else:
                cells += [number(outcome.final), _epoch(outcome.final_epoch),
                          number(outcome.best), _epoch(outcome.best_epoch)]  # fmt: skip
            rows.append([_printable(cell) for cell in cells])
    widths = [max(len(cells[i]) for cells in [header, *rows]) for i in range(len(header))]
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|\n"
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(cells, widths)) + " |\n"
        for cells in [header, *rows]
    ]
    return text + "\n\n" + lines[0] + rule + "".join(lines[1:])


def _epoch(epoch: int | None) -> str:
    return "-" if epoch is None else str(epoch)


def _printable(text: str) -> str:
    """`text` on one line of a table: control characters as `?`, `|` escaped."""
    return "".join(c if c.isprintable() else "?" for c in text).replace("|", "\\|")

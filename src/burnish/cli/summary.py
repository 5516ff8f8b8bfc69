"""`burnish summary DIR`: the LearnerSummary of a finished or interrupted run, from its logs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError

__all__ = ["add_parser", "learner_summary", "run"]


def add_parser(commands: Any) -> None:
    """Add the `summary` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "summary",
        help="the learner summary of a run, from its logs",
        description="Print the min and max epoch value of every metric of a run (Burn's "
        "learner summary), read from <DIR>/train and <DIR>/valid: works for finished and "
        "interrupted runs.",
    )
    parser.add_argument("directory", metavar="DIR", help="the run's artifact directory")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Print the learner summary of the run `args.directory`, read from its metric logs.

    Returns:
        0, the exit status.

    Raises:
        CommandError: if the directory is missing, not a directory, or holds no metric logs.
    """
    print(learner_summary(Path(args.directory)), end="")
    return 0


def learner_summary(directory: Path) -> Any:
    """`LearnerSummary.from_dir(directory)`, refusing a directory that has no metric logs.

    Raises:
        CommandError: if `directory` is missing, not a directory, or holds no metric logs.
    """
    from burnish.train import LearnerSummary

    if not directory.exists():
        raise CommandError(f"No such directory: {directory}. Pass a run's artifact directory.")
    if not directory.is_dir():
        raise CommandError(
            f"{directory} is a file, not a run's artifact directory (the directory given to "
            "`LearnerBuilder(artifact_dir)`)."
        )
    try:
        summary = LearnerSummary.from_dir(directory)
    except FileNotFoundError as error:
        raise CommandError(str(error)) from None
    if not summary.metrics.train and not summary.metrics.valid and not summary.metrics.test:
        raise CommandError(
            f"{directory} has no numeric metric logs (expected `train/epoch-N/<Metric>.log`, "
            "`valid/...` or an evaluation's `test/<name>/<Metric>.log`): the run logged "
            "nothing yet, or this is not a run's directory."
        )
    return summary

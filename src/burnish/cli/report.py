"""`burnish report DIR [DIR ...] [-o FILE]`: one self-contained HTML page about a run, or
comparing several.

What a run's artifact directory holds is gathered by `cli.run_data` (`collect_run`), and
`cli.page` renders it. Several directories make a comparison instead: `cli.compare` gathers
the runs and `cli.compare_page` renders them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError, format_bytes
from burnish.cli.compare import collect_runs
from burnish.cli.compare_page import render_comparison
from burnish.cli.lr_finder_section import lr_finder_page
from burnish.cli.page import render_page
from burnish.cli.remote import local_runs
from burnish.cli.run_data import (  # collect_run's names: from here too, as before run_data.py
    Checkpoint,
    MetricCurves,
    RunReport,
    collect_run,
    metric_curves,
    read_config,
)
from burnish.io import atomic_write_bytes
from burnish.storage.url import is_url
from burnish.tune.lr_finder_result import LR_FINDER_FILE

__all__ = [
    "COMPARISON_FILE",
    "Checkpoint",
    "MetricCurves",
    "RunReport",
    "add_parser",
    "collect_run",
    "metric_curves",
    "read_config",
    "run",
]

#: Where a comparison of several runs is written without `-o` (in the current directory).
COMPARISON_FILE = "comparison.html"


def add_parser(commands: Any) -> None:
    """Add the `report` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "report",
        help="one self-contained HTML page about a run, or comparing several",
        description="Write one HTML page about a run: train and valid curves of every metric, "
        "the learning-rate finder's sweep (lr_finder.json), the learner summary, the config, "
        "the model and the checkpoints. With several runs, "
        "one page comparing them: their curves overlaid (one colour per run), their final and "
        "best values side by side and how their configs differ. It needs no network and no "
        "scripts to view.",
    )
    parser.add_argument(
        "directories",
        metavar="DIR",
        nargs="+",
        help="a run's artifact directory or its URL, e.g. s3://bucket/run (one or more)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help=f"where to write the page (default DIR/report.html, report.html in the current "
        f"directory for a URL; for several runs, {COMPARISON_FILE} in the current directory)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Write the HTML report of the run `args.directories[0]` to `args.output` (or
    `DIR/report.html`); of several runs, their comparison (default `COMPARISON_FILE`).

    Returns:
        0, the exit status.

    Raises:
        CommandError: if the output is a directory, a `DIR` is missing or holds no metric
            logs, or a run is given twice.
    """
    if len(args.directories) == 1:
        local = not is_url(args.directories[0])
        default = Path(args.directories[0]) / "report.html" if local else Path("report.html")
    else:
        default = Path(COMPARISON_FILE)
    output = Path(args.output) if args.output else default
    if output.is_dir():
        raise CommandError(
            f"{output} is a directory; pass a file name, e.g. {output / default.name}."
        )
    with local_runs(args.directories, checkpoints=True) as directories:
        page = _page(directories, output)
    atomic_write_bytes(output, page.encode("utf-8"))
    print(f"Wrote {output} ({format_bytes(output.stat().st_size)})")
    return 0


def _page(directories: list[Path], output: Path) -> str:
    if len(directories) == 1:
        try:
            return render_page(collect_run(directories[0], leave_out=output))
        except CommandError:
            if (directories[0] / LR_FINDER_FILE).is_file():  # lr_find ran, fit not yet
                return lr_finder_page(directories[0])
            raise
    return render_comparison(collect_runs(directories))

"""The `burnish` parser, its subcommands and the rules for errors.

Bad input: one line, exit status 1. A bug (any other exception): its traceback, then the same
line and how to report it. `--debug` prints the traceback of every error.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence

from burnish import __version__
from burnish.cli import convert, export, inspect, report, summary
from burnish.errors import BurnishError

__all__ = ["BUG_REPORT", "build_parser", "main"]

BUG_REPORT = (
    "This is a bug in burnish, not a problem with your input. Please report it to the burnish "
    "maintainers (the project's issue tracker) with the command you ran, the traceback above "
    "and the output of `burnish --version`."
)

_COMMANDS = (summary, report, inspect, convert, export)


def build_parser() -> argparse.ArgumentParser:
    """The `burnish` parser; each subcommand sets `run(args) -> exit status`."""
    parser = argparse.ArgumentParser(
        prog="burnish",
        description="Look at burnish training runs and records.",
    )
    parser.add_argument("--version", action="version", version=f"burnish {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="print the traceback of any error, not one line"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 an error, 2 bad usage).

    Errors caused by the input (a missing directory, a file that is not a record, a truncated
    one) print one line, `burnish <command>: error: <what, and what to do>` (with `--debug`,
    after its traceback). Any other exception is a bug: its traceback, that line and how to
    report it.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print(f"burnish {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `burnish inspect big.mpk | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (BurnishError, OSError, ValueError) as error:
        if args.debug:
            traceback.print_exc()
        _fail(args.command, _message(error))
    except Exception as error:  # a bug, not the input: what a bug report needs
        traceback.print_exc()
        _fail(args.command, f"unexpected {type(error).__name__}: {_message(error)}")
        print(BUG_REPORT, file=sys.stderr)
    return 1


def _message(error: BaseException) -> str:
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        return f"{error.strerror}: {error.filename}"
    return " ".join(str(error).split()) or type(error).__name__


def _fail(command: str, message: str) -> None:
    print(f"burnish {command}: error: {message}", file=sys.stderr)

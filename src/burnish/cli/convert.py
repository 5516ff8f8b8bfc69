"""`burnish convert IN OUT --to FORMAT [--precision P]`: re-save a record with another recorder.

| `--to`        | recorder                  | precision when `--precision` is not given |
|---------------|---------------------------|-------------------------------------------|
| `compact`     | `CompactRecorder`         | half (always)                             |
| `default`     | `DefaultRecorder`         | full (always)                             |
| `safetensors` | `SafetensorsFileRecorder` | the input file's                          |
| `bin`         | `BinFileRecorder`         | the input file's                          |
| `json`        | `PrettyJsonFileRecorder`  | the input file's                          |
| `burnpack`    | `BurnpackFileRecorder`    | the input file's                          |

On a terminal, records of `LARGE_RECORD_BYTES` or more show a progress bar while they are
read and written; anywhere else only the one result line is printed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError, format_bytes

__all__ = [
    "FORMATS",
    "LARGE_RECORD_BYTES",
    "PRECISIONS",
    "add_parser",
    "check_precision",
    "recorder_for",
    "run",
]

FORMATS = ("safetensors", "compact", "default", "bin", "json", "burnpack")
PRECISIONS = ("half", "full", "double")
#: Input size from which a terminal shows progress bars (smaller files convert in a blink).
LARGE_RECORD_BYTES = 16 << 20


def add_parser(commands: Any) -> None:
    """Add the `convert` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "convert",
        help="re-save a record in another format or precision",
        description="Load a record file (any format burnish reads) and save it with another "
        "recorder. compact is half precision and default full; the other formats keep the "
        "input's precision unless --precision is given.",
    )
    parser.add_argument("input", metavar="IN", help="the record file to read")
    parser.add_argument(
        "output", metavar="OUT", help="where to write (the format's extension is added)"
    )
    parser.add_argument("--to", required=True, choices=FORMATS, help="the output format")
    parser.add_argument("--precision", choices=PRECISIONS, help="the stored float/int precision")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Convert `args.input` to `args.output` with the recorder `args.to` names; print one line.

    Args:
        args: The parsed `input`, `output`, `to` and `precision`.

    Returns:
        0, the exit status.

    Raises:
        CommandError: if `--precision` contradicts `--to`.
        RecordError: if the input is not a record burnish reads.
        RunLockedError: if the output lies in a run directory that a live run is writing.
        OSError: if a file cannot be read or written.
    """
    from burnish.progress import byte_progress
    from burnish.record import recorder_for_file
    from burnish.record.tree import restore
    from burnish.run_lock import find_run_directory, run_lock

    check_precision(args.to, args.precision)  # before reading a large file
    source = Path(args.input)
    reader = recorder_for_file(source)
    size = source.stat().st_size
    with byte_progress(sys.stdout, enabled=size >= LARGE_RECORD_BYTES) as progress:
        metadata, tree = reader.load_stored(
            source, progress=progress.task(f"Reading {source.name}", size)
        )
        writer = recorder_for(args.to, args.precision, metadata.settings)
        target = writer.file_path(args.output)
        with run_lock(find_run_directory(target.parent)):  # not beside a live fit's writes
            target = writer.record(
                restore(tree, None),
                target,
                record_type=metadata.record_type,
                progress=progress.task(f"Writing {target.name}"),
            )
    print(
        f"Converted {source} ({metadata.format}, {metadata.settings or 'as stored'}) to "
        f"{target} ({writer.format}, {writer.settings.name}, {format_bytes(target.stat().st_size)})"
    )
    return 0


def check_precision(to: str, precision: str | None) -> None:
    """Refuse a `--precision` that contradicts `--to` (compact is half, default full).

    Raises:
        CommandError: naming the format that has the precision asked for.
    """
    fixed = {"compact": "half", "default": "full"}.get(to)
    if fixed is not None and precision not in (None, fixed):
        other = {"half": "compact", "full": "default"}.get(precision)
        hint = f"--to {other}" if other else "--to bin, json, safetensors or burnpack"
        raise CommandError(
            f"--to {to} is always {fixed} precision (Burn's {to.title()}Recorder). "
            f"Received: --precision {precision}. Use {hint} instead."
        )


def recorder_for(to: str, precision: str | None, input_settings: str) -> Any:
    """The recorder `--to` names, at `precision` (else the format's or the input's).

    Args:
        to: One of `FORMATS`.
        precision: One of `PRECISIONS`, or None.
        input_settings: The input file's settings name (`"HalfPrecisionSettings"`, ...).

    Raises:
        CommandError: as `check_precision`.
    """
    from burnish import record

    check_precision(to, precision)
    if to == "compact":
        return record.CompactRecorder()
    if to == "default":
        return record.DefaultRecorder()
    settings = {
        "half": record.HalfPrecisionSettings,
        "full": record.FullPrecisionSettings,
        "double": record.DoublePrecisionSettings,
    }
    if precision is None:
        by_name = {cls.__name__: name for name, cls in settings.items()}
        precision = by_name.get(input_settings, "full")
    recorders: dict[str, Callable[[record.PrecisionSettings], record.FileRecorder]] = {
        "safetensors": record.SafetensorsFileRecorder,
        "bin": record.BinFileRecorder,
        "json": record.PrettyJsonFileRecorder,
        "burnpack": record.BurnpackFileRecorder,
    }
    return recorders[to](settings[precision]())

"""`burnish export DIR --to onnx|torch-export --model MODULE:FACTORY --example MODULE:LOADER`:
the run's trained model as an ONNX file or a torch.export program, checked before it is written.

The factory builds the untrained model (the run's directory does not say how); the run's
final `model.*` record (else its newest committed checkpoint's, or `--checkpoint`/`--record`)
is loaded into it; the example input is the first batch of the loader `--example` returns
(`--inputs` names the batch's field holding the model's input). Each callable is called with
the run's directory if it takes an argument, else with none.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError, format_bytes

__all__ = ["TARGETS", "add_parser", "run", "summary_line"]

#: `burnish.export.TARGETS`' names, spelled out: building the parser imports no torch.
TARGETS = ("onnx", "torch-export")


def add_parser(commands: Any) -> None:
    """Add the `export` subcommand to `commands` (the parser's subparsers)."""
    parser = commands.add_parser(
        "export",
        help="the trained model as an ONNX file or a torch.export program",
        description="Build the model with --model, load the run's trained weights into it, "
        "trace its inference twin (eval mode) on the first batch of --example's loader and "
        "write DIR/model.onnx or DIR/model.pt2, once onnxruntime or torch.export.load runs "
        "the file to the model's outputs (within float tolerance) at two batch sizes.",
    )
    parser.add_argument("directory", metavar="DIR", help="the run's artifact directory")
    parser.add_argument("--to", required=True, choices=TARGETS, help="the format")
    parser.add_argument(
        "--model",
        required=True,
        metavar="MODULE:FACTORY",
        help="a callable returning the untrained model, e.g. examples.mnist.export:model",
    )
    parser.add_argument(
        "--example",
        required=True,
        metavar="MODULE:LOADER",
        help="a callable returning the validation loader (its first batch is the example)",
    )
    parser.add_argument(
        "--inputs", metavar="FIELD", help="the batch's field or key that is the model's input"
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--checkpoint", metavar="NAME", help="load checkpoint NAME (epoch-3)")
    where.add_argument("--record", metavar="FILE", help="load this record file instead")
    parser.add_argument("-o", "--output", metavar="PATH", help="where to write (default DIR/model)")
    parser.add_argument(
        "--static-batch", action="store_true", help="fix the batch size to the example's"
    )
    parser.add_argument("--device", default="cpu", help="where to run the model (default cpu)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Export the model of the run `args.directory`; print one line.

    Returns:
        0, the exit status.

    Raises:
        CommandError: for a bad directory, callable, record or example, or a record that
            does not fit the model the factory built.
        ExportError: if torch cannot export the model, or the file does not compute what
            the model computes (nothing is written then).
        RecordError: if the record file cannot be read.
        RunLockedError: if a live run is writing the directory the file goes to.
    """
    from burnish.cli.export_source import (
        call_with_run,
        import_callable,
        model_record,
        record_misfit,
    )
    from burnish.export import export
    from burnish.module import load_record
    from burnish.record import RecordError, recorder_for_file
    from burnish.run_lock import find_run_directory, run_lock

    directory = Path(args.directory)
    record_path = model_record(directory, args.checkpoint, args.record)
    factory = import_callable(args.model, "--model")
    loader_of = import_callable(args.example, "--example")
    model = call_with_run(factory, directory, "--model", args.model)
    if not hasattr(model, "state_dict") or not callable(model):
        raise CommandError(
            f"--model {args.model} returned a {type(model).__name__}, not a torch.nn.Module."
        )
    record = recorder_for_file(record_path).load(record_path)
    try:
        model = load_record(model.to(args.device), record)
    except RecordError as error:
        raise record_misfit(error, record_path, directory, args.model) from error
    loader = call_with_run(loader_of, directory, "--example", args.example)
    output = Path(args.output) if args.output else directory / "model"
    with run_lock(find_run_directory(output.parent)):  # not beside a live fit's writes
        result = export(
            model, loader, output, args.to, inputs=args.inputs, dynamic_batch=not args.static_batch
        )
    print(summary_line(result, record_path))
    return 0


def summary_line(result: Any, record_path: Path) -> str:
    """One line: what was exported, where, and how close the file's outputs came."""
    sizes = " and ".join(str(size) for size in result.batch_sizes)
    plural = "s" if len(result.batch_sizes) != 1 else ""
    return (
        f"Exported {result.model} ({record_path}) to {result.path} ({result.target}, "
        f"{format_bytes(result.path.stat().st_size)}); run by {result.runtime} at batch "
        f"size{plural} {sizes}: largest difference {result.largest_difference:.2g} "
        f"(allowed {result.allowed:.2g})"
    )

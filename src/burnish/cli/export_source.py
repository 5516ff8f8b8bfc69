"""What `burnish export` needs besides the run's directory: the user's callables named
`module:attribute` (the model's factory, the example's loader) and the model record to load.

A run's directory holds the trained weights but not how to build the model (its constructor
and config are the user's code), so the command imports a factory, as `uvicorn app:factory`
does, and loads the record into what it returns.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from burnish.cli.base import CommandError

__all__ = ["call_with_run", "import_callable", "model_record", "record_misfit"]

#: Where a `RecordError` turns from what does not fit to how a Python caller loads it anyway
#: (`strict=False`, `.allow_partial()`): options the command line does not have.
_LIBRARY_REMEDY = "\nFix the "

#: What `burnish export` writes beside the record (ONNX, its external weights, torch.export).
_EXPORTED = (".onnx", ".onnx.data", ".pt2")


def import_callable(spec: str, option: str) -> Callable[..., Any]:
    """The callable `spec` (`"package.module:name"`, `name` may be dotted) names, imported
    with the current directory first on `sys.path` (as `python -m` has it).

    Raises:
        CommandError: for a malformed spec, a module that cannot be imported, a missing
            attribute, or one that is not callable.
    """
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        raise CommandError(
            f"{option} must be 'module:callable', e.g. {option} examples.mnist.export:model. "
            f"Received: {spec!r}."
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise CommandError(
            f"{option} {spec}: cannot import {module_name!r} ({error}). Run the command from "
            "the directory that holds the package, or add it to PYTHONPATH."
        ) from error
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise CommandError(f"{option} {spec}: {module_name!r} has no attribute {attribute!r}.")
        found = getattr(found, part)
    if not callable(found):
        raise CommandError(
            f"{option} {spec}: {attribute!r} is a {type(found).__name__}, not a callable."
        )
    return found


def call_with_run(function: Callable[..., Any], directory: Path, option: str, spec: str) -> Any:
    """`function(directory)`, or `function()` when it takes no argument.

    Raises:
        CommandError: if the call raises: the user's code failed, not burnish.
    """
    try:
        required = [
            parameter
            for parameter in inspect.signature(function).parameters.values()
            if parameter.default is parameter.empty
            and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # a builtin without a signature
        required = []
    try:
        return function(directory) if required else function()
    except Exception as error:
        raise CommandError(
            f"{option} {spec} raised {type(error).__name__}: {error}. (--debug shows where.)"
        ) from error


def model_record(directory: Path, checkpoint: str | None, record: str | None) -> Path:
    """The record to load: `record` (relative to `directory` unless absolute); the model
    record of the checkpoint named `checkpoint`; else the run's final `model.*` file (not an
    export: `.onnx`, `.pt2`), else the newest committed checkpoint's model record.

    Raises:
        CommandError: if `directory` is not a directory, or no such record is there.
    """
    if not directory.is_dir():
        what = "a file" if directory.exists() else "missing"
        raise CommandError(
            f"{directory} is {what}: pass a run's artifact directory (the directory given to "
            "`LearnerBuilder(artifact_dir)`)."
        )
    if record is not None:
        path = directory / record
        if not path.is_file():
            raise CommandError(f"--record {record}: no such file in {directory} ({path}).")
        return path
    if checkpoint is not None:
        return _checkpoint_record(directory, checkpoint)
    finals = sorted(
        path
        for path in directory.glob("model.*")
        if path.is_file() and not path.name.endswith(_EXPORTED)
    )
    if len(finals) > 1:
        names = ", ".join(path.name for path in finals)
        raise CommandError(
            f"{directory} holds several model records ({names}): pick one with --record."
        )
    if finals:
        return finals[0]
    newest = _committed(directory)
    if not newest:
        raise CommandError(
            f"{directory} holds no model record: no model.* file (as `result.model.save_file("
            f"'{directory}/model', recorder)` writes) and no committed checkpoint. Pass one "
            "with --record FILE."
        )
    return _checkpoint_record(directory, newest[-1])


def _committed(directory: Path) -> list[str]:
    from burnish.train.checkpoint.file import committed_checkpoints

    checkpoints = directory / "checkpoint"
    if not checkpoints.is_dir():
        return []
    return [checkpoint.name for checkpoint in committed_checkpoints(checkpoints)]


def _checkpoint_record(directory: Path, name: str) -> Path:
    committed = _committed(directory)
    if name not in committed:
        known = ", ".join(committed[-6:]) or "none"
        raise CommandError(
            f"--checkpoint {name}: {directory}/checkpoint has no committed checkpoint of that "
            f"name (newest: {known})."
        )
    found = sorted((directory / "checkpoint" / name).glob("model.*"))
    if not found:
        raise CommandError(f"Checkpoint {name} of {directory} holds no model record (model.*).")
    return found[0]


def record_misfit(error: Exception, record_path: Path, directory: Path, spec: str) -> CommandError:
    """The error for a record that does not fit the model `--model spec` built: what does
    not fit (the `RecordError`'s list, without its Python-only remedies such as
    `strict=False`), and what the command's user can change: the factory, or the record.
    """
    text = str(error).split(_LIBRARY_REMEDY, 1)[0].rstrip(". \n")
    head, *listed = [line.strip() for line in text.splitlines() if line.strip()]
    problems = f"{head} {'; '.join(listed)}" if listed else head
    return CommandError(
        f"{record_path} does not fit the model --model {spec} built: {problems}. Check that "
        f"--model builds the run's model with the run's settings (e.g. from {directory}/"
        "config.json), or pass the record of that model with --record FILE or --checkpoint NAME."
    )

"""`export`: the inference model (`model.valid()`) to an ONNX file or a torch.export program,
traced on an example input, then run from the file and compared with the model."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnish.export.base import ExportError, Target, target_named, torch_reason
from burnish.export.compare import (
    Difference,
    Tolerance,
    default_tolerance,
    difference,
    output_leaves,
)
from burnish.export.example import Inputs, batch_size, example_input, is_example
from burnish.export.onnx_file import load_onnx, onnxruntime_version, require_onnx, write_onnx
from burnish.export.program_file import load_program, torch_version, write_program
from burnish.export.quiet import quiet_exporter
from burnish.export.staging import staged_file
from burnish.module import valid

__all__ = ["ExportResult", "export"]

Runner = Callable[[tuple[torch.Tensor, ...]], list[torch.Tensor]]
_WRITERS = {"onnx": write_onnx, "torch-export": write_program}
_LOADERS: dict[str, Callable[[Path], Runner]] = {"onnx": load_onnx, "torch-export": load_program}
_RUNTIMES = {"onnx": onnxruntime_version, "torch-export": torch_version}


@dataclasses.dataclass(frozen=True)
class ExportResult:
    """What `export` wrote and how the file's outputs compared with the model's.

    Attributes:
        path: the file written (`.onnx` or `.pt2`).
        target: `"onnx"` or `"torch-export"`.
        model: the model's class name.
        runtime: what ran the file for the check, with its version.
        batch_sizes: the batch sizes the file was run at (two when the batch is dynamic).
        largest_difference: the largest `|file - model|` over every output and check.
        allowed: the largest difference the tolerance allowed (`atol + rtol * max|output|`).
    """

    path: Path
    target: str
    model: str
    runtime: str
    batch_sizes: tuple[int, ...]
    largest_difference: float
    allowed: float


def export(
    model: nn.Module,
    example: Any,
    path: str | os.PathLike,
    to: str = "onnx",
    *,
    inputs: Inputs = None,
    dynamic_batch: bool = True,
    tolerance: Tolerance | None = None,
) -> ExportResult:
    """Export the model's inference twin (`model.valid()`: eval mode, no dropout, no autograd)
    and check the file: run by onnxruntime (ONNX) or `torch.export.load` (torch-export), its
    outputs must equal the model's within `tolerance`, at the example's batch size and
    another. The file is written beside `path` and moved there only once the check passed: a
    failed export leaves the previous file as it was.

    Args:
        model: the trained model (e.g. `result.model`); it keeps its mode.
        example: the forward's inputs (a tensor or a tuple of tensors), or a data loader whose
            first batch gives them (the validation loader, with `inputs`).
        path: where to write; `.onnx` or `.pt2` is added unless `path` ends with it.
        to: `"onnx"` or `"torch-export"`.
        inputs: how to get the forward's inputs out of a loader's batch (`batch_inputs`).
        dynamic_batch: the batch dimension (the inputs' first) stays free in the file; False
            fixes every shape to the example's.
        tolerance: the largest difference allowed; default `default_tolerance`.

    Returns:
        The `ExportResult`: the path, and the largest difference measured.

    Raises:
        ExportError: for a target that is not one of those, a bad example, a model torch
            cannot export (naming it, the target and torch's reason), a file whose outputs
            differ from the model's, or a missing optional package (`burnish[export]`).
        OSError: if the file cannot be written.

    Example:
        >>> result = export(model, dataloader_valid, "artifacts/model", to="onnx",
        ...                 inputs="images")  # doctest: +SKIP
    """
    target = target_named(to)
    if target.name == "onnx":
        require_onnx()
    inference = valid(model)
    device = _device(inference)
    example = _forward_inputs(example, inputs, device)
    size = batch_size(example) if dynamic_batch else None
    reference = _outputs(inference, example, model)
    tolerance = tolerance if tolerance is not None else default_tolerance(reference)
    destination = target.file_path(path)
    with staged_file(destination) as staged:
        traced = _twice(example) if size == 1 else example
        _write(target, inference, traced, staged, dynamic_batch, len(reference))
        run = _load(target, staged, type(model).__name__)
        checked, worst = _check(inference, run, _checks(example, traced, dynamic_batch), tolerance)
        if worst.mismatch is not None:
            raise ExportError(
                f"The {target.name} export of {type(model).__name__} does not compute what the "
                f"model computes: {worst.mismatch}, run by {_RUNTIMES[target.name]()}. "
                f"{destination} was not written. The model may use an operation the exporter "
                "translates differently; compare with to='torch-export', or pass a looser "
                "`tolerance` if the difference is rounding."
            )
    return ExportResult(
        path=destination,
        target=target.name,
        model=type(model).__name__,
        runtime=_RUNTIMES[target.name](),
        batch_sizes=checked,
        largest_difference=worst.largest,
        allowed=worst.allowed,
    )


def _device(model: nn.Module) -> torch.device:
    for tensor in (*model.parameters(), *model.buffers()):
        return tensor.device
    return torch.device("cpu")


def _forward_inputs(example: Any, inputs: Inputs, device: torch.device) -> tuple[torch.Tensor, ...]:
    if isinstance(example, torch.Tensor):
        found: tuple[torch.Tensor, ...] = (example,)
    elif is_example(example):
        found = tuple(example)
    else:
        found = example_input(example, inputs)
    if not found:
        raise ExportError("The example holds no tensor. Pass the forward's inputs.")
    return tuple(tensor.to(device) for tensor in found)


def _outputs(
    inference: nn.Module, example: tuple[torch.Tensor, ...], model: nn.Module
) -> list[torch.Tensor]:
    """The model's outputs on the example; refused when the check would compare nothing."""
    try:
        with torch.no_grad():
            outputs = output_leaves(inference(*example))
    except TypeError as error:
        raise ExportError(f"{type(model).__name__}: {error}") from error
    floats = [t for t in outputs if t.is_floating_point() and t.numel()]
    if floats and not any(bool(torch.isfinite(t).any()) for t in floats):
        raise ExportError(
            f"{type(model).__name__}'s outputs on the example are all NaN or infinite: the "
            "exported file could not be checked against them. Pass an example with finite "
            "values (e.g. the validation loader's first batch), or check the model's weights."
        )
    return outputs


def _twice(example: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """A batch of one, repeated: torch specialises a dimension of size 1 to a constant."""
    return tuple(torch.cat([t, t]) if t.dim() >= 1 else t for t in example)


def _checks(
    example: tuple[torch.Tensor, ...], traced: tuple[torch.Tensor, ...], dynamic: bool
) -> list[tuple[torch.Tensor, ...]]:
    """The inputs the file is run at: the example; the traced batch, reversed (values the
    exporter kept as constants would show); with a dynamic batch, another batch size."""
    reversed_batch = tuple(t.flip(0) if t.dim() >= 1 else t for t in traced)
    checks = [example, reversed_batch]
    if dynamic and traced[0].dim() >= 1 and traced is example:
        checks.append(tuple(t[:1] if t.dim() >= 1 else t for t in example))
    return checks


def _write(
    target: Target,
    inference: nn.Module,
    example: tuple[torch.Tensor, ...],
    path: Path,
    dynamic: bool,
    outputs: int,
) -> None:
    shapes = None
    if dynamic:
        batch = torch.export.Dim("batch", min=1)
        shapes = tuple({0: batch} if t.dim() >= 1 else None for t in example)
    names = ["output"] if outputs == 1 else [f"output_{i}" for i in range(outputs)]
    try:
        with quiet_exporter():
            _WRITERS[target.name](inference, example, path, shapes, names)
    except ExportError:
        raise
    except Exception as error:
        reason = torch_reason(error)
        hint = ""
        if dynamic and ("Constraints violated" in str(error) or "batch" in reason):
            hint = (
                " The batch dimension was exported as dynamic: if the model needs a fixed "
                "batch size, export with dynamic_batch=False (--static-batch)."
            )
        raise ExportError(
            f"Could not export {type(inference).__name__} to {target.name}: torch's reason: "
            f"{reason}.{hint}"
        ) from error


def _load(target: Target, path: Path, model: str) -> Runner:
    try:
        return _LOADERS[target.name](path)
    except Exception as error:
        raise ExportError(
            f"{_RUNTIMES[target.name]()} could not load the exported {target.name} file of "
            f"{model}: {torch_reason(error)}"
        ) from error


def _check(
    inference: nn.Module,
    run: Runner,
    checks: list[tuple[torch.Tensor, ...]],
    tolerance: Tolerance,
) -> tuple[tuple[int, ...], Difference]:
    """Run the file and the model at each of `checks`; the batch sizes and the worst result."""
    worst = Difference(0.0, 0.0)
    sizes: list[int] = []
    for inputs in checks:
        with torch.no_grad():
            expected = output_leaves(inference(*inputs))
        try:
            actual = run(inputs)
        except Exception as error:
            raise ExportError(
                f"The exported {type(inference).__name__} failed to run on inputs of shapes "
                f"{[tuple(t.shape) for t in inputs]}: {torch_reason(error)}"
            ) from error
        found = difference(expected, actual, tolerance)
        if found.mismatch is not None:
            return tuple(sizes), found
        worst = Difference(max(worst.largest, found.largest), max(worst.allowed, found.allowed))
        size = inputs[0].shape[0] if inputs[0].dim() >= 1 else 1
        if size not in sizes:
            sizes.append(size)
    return tuple(sizes), worst

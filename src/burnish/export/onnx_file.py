"""ONNX: torch's dynamo exporter writes the file (onnx and onnxscript), onnxruntime runs it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnish.export.base import ExportError

__all__ = ["load_onnx", "onnxruntime_version", "require_onnx", "write_onnx"]

_INSTALL = "pip install 'burnish[export]'"


def require_onnx() -> None:
    """Raises ExportError unless onnx, onnxscript and onnxruntime can be imported."""
    missing = []
    for package in ("onnx", "onnxscript", "onnxruntime"):
        try:
            importlib.import_module(package)
        except ImportError:
            missing.append(package)
    if missing:
        raise ExportError(
            f"Exporting to ONNX needs {', '.join(missing)}: install them ({_INSTALL}), or "
            "export with to='torch-export' (--to torch-export), which needs only torch."
        )


def write_onnx(
    model: nn.Module,
    example: tuple[torch.Tensor, ...],
    path: Path,
    dynamic_shapes: tuple[dict[int, Any] | None, ...] | None,
    output_names: list[str],
) -> None:
    """Trace `model(*example)` with torch's dynamo exporter and save the graph at `path`
    (weights inside the file; beside it, `<name>.data`, for models over 2 GB)."""
    program = torch.onnx.export(
        model,
        example,
        dynamo=True,
        dynamic_shapes=dynamic_shapes,
        output_names=output_names,
        verbose=False,
    )
    assert program is not None  # dynamo=True always returns the program
    program.save(str(path))


def load_onnx(path: Path) -> Callable[[tuple[torch.Tensor, ...]], list[torch.Tensor]]:
    """The file at `path` in an onnxruntime session on the CPU: `run(inputs) -> outputs`."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [node.name for node in session.get_inputs()]

    def run(inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        feeds = {name: tensor.detach().cpu().numpy() for name, tensor in zip(names, inputs)}
        return [torch.from_numpy(output) for output in session.run(None, feeds)]

    return run


def onnxruntime_version() -> str:
    import onnxruntime

    return f"onnxruntime {onnxruntime.__version__}"

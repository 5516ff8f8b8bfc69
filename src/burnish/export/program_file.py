"""torch.export: an `ExportedProgram` saved with `torch.export.save` (`.pt2`), run by
`torch.export.load(path).module()`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from burnish.export.compare import output_leaves

__all__ = ["load_program", "torch_version", "write_program"]


def write_program(
    model: nn.Module,
    example: tuple[torch.Tensor, ...],
    path: Path,
    dynamic_shapes: tuple[dict[int, Any] | None, ...] | None,
    output_names: list[str],
) -> None:
    """Trace `model(*example)` with `torch.export.export` and save the program at `path`."""
    program = torch.export.export(model, example, dynamic_shapes=dynamic_shapes)
    torch.export.save(program, str(path))


def load_program(path: Path) -> Callable[[tuple[torch.Tensor, ...]], list[torch.Tensor]]:
    """The program at `path`, loaded as torch loads it: `run(inputs) -> outputs`."""
    module = torch.export.load(str(path)).module()

    def run(inputs: tuple[torch.Tensor, ...]) -> list[torch.Tensor]:
        with torch.no_grad():
            return output_leaves(module(*inputs))

    return run


def torch_version() -> str:
    return f"torch {torch.__version__}"

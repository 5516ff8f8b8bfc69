"""What every export target shares: the targets' names, the error, torch's reason in one line."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

from burnish.errors import BurnishError

__all__ = ["TARGETS", "ExportError", "Target", "target_named", "torch_reason"]


class ExportError(BurnishError, ValueError):
    """A model could not be exported, or its exported file does not compute what the model
    computes: names the model, the target and the reason."""


@dataclasses.dataclass(frozen=True)
class Target:
    """An export format: its `--to` name, file extension and what runs the file."""

    name: str
    extension: str
    runtime: str

    def file_path(self, path: str | os.PathLike) -> Path:
        """`path` with the target's extension added unless it ends with it already
        (`model` -> `model.onnx`, as recorders add theirs)."""
        path = Path(path)
        return (
            path
            if path.name.endswith(self.extension)
            else path.with_name(path.name + self.extension)
        )


ONNX = Target("onnx", ".onnx", "onnxruntime")
TORCH_EXPORT = Target("torch-export", ".pt2", "torch.export.load")
TARGETS: dict[str, Target] = {target.name: target for target in (ONNX, TORCH_EXPORT)}


def target_named(to: object) -> Target:
    """The target `to` names (`"onnx"` or `"torch-export"`).

    Raises:
        ExportError: for any other value, naming the targets there are.
    """
    target = TARGETS.get(to) if isinstance(to, str) else None
    if target is None:
        names = " or ".join(f'"{name}"' for name in TARGETS)
        raise ExportError(f"`to` must be {names}. Received: to={to!r}.")
    return target


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_REASON_CHARS = 400


def torch_reason(error: BaseException) -> str:
    """The line of `error` that says why torch could not export: the ONNX exporter's
    "Exception summary" when it has one, else the first line; colours removed, one line."""
    text = _ANSI.sub("", str(error))
    _, summary, rest = text.partition("## Exception summary")
    lines = [line.strip() for line in (rest if summary else text).splitlines()]
    reason = next((line for line in lines if line), "") or type(error).__name__
    if not reason.startswith(type(error).__name__) and summary == "":
        reason = f"{type(error).__name__}: {reason}"
    if len(reason) > _REASON_CHARS:
        reason = reason[: _REASON_CHARS - 3] + "..."
    return reason

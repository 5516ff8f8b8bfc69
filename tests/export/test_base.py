"""The targets' names and paths, and torch's reason for a failed export in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from burnish.cli import export as export_command
from burnish.export import TARGETS, ExportError
from burnish.export.base import target_named, torch_reason


def test_targets_and_the_extension_added_as_recorders_add_theirs() -> None:
    assert tuple(TARGETS) == export_command.TARGETS  # the CLI spells them without torch
    onnx = target_named("onnx")
    assert onnx.file_path("out/model") == Path("out/model.onnx")
    assert onnx.file_path("out/model.onnx") == Path("out/model.onnx")
    assert target_named("torch-export").file_path("model.v2") == Path("model.v2.pt2")
    for bad in ("ONNX", "pt2", None, 1):
        with pytest.raises(ExportError, match=r'`to` must be "onnx" or "torch-export"'):
            target_named(bad)


def test_torchs_reason_is_the_exception_summary_or_the_first_line() -> None:
    class Branchy(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x if x.sum() > 0 else -x

    with pytest.raises(Exception) as caught:
        torch.onnx.export(Branchy().eval(), (torch.randn(2),), dynamo=True, verbose=False)
    reason = torch_reason(caught.value)
    assert "\n" not in reason and "\x1b" not in reason and len(reason) <= 400
    assert "GuardOnDataDependentSymNode" in reason, reason
    assert torch_reason(ValueError("first\nsecond")) == "ValueError: first"
    assert torch_reason(RuntimeError("")) == "RuntimeError"

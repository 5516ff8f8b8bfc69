"""Pick the renderer that suits where the output goes (Burn: TUI with a terminal, else CLI)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from burnish.train.renderer.base import MetricsRenderer
from burnish.train.renderer.cli import CliMetricsRenderer
from burnish.train.renderer.notebook import NotebookMetricsRenderer, in_notebook
from burnish.train.renderer.tui import TuiMetricsRenderer, terminal_console

__all__ = ["RENDERER_ENV", "default_renderer"]

RENDERER_ENV = "BURNISH_RENDERER"
_CHOICES = ("auto", "tui", "cli", "notebook")


def default_renderer(stream: TextIO | None = None) -> MetricsRenderer:
    """The notebook renderer inside a Jupyter kernel; else the TUI when `stream` (default
    stdout) is a terminal and `TERM` is not dumb; else the CLI.

    The environment variable `BURNISH_RENDERER` (`tui`, `cli`, `notebook` or `auto`) overrides
    the choice.

    Args:
        stream: The stream the renderer will write to; default `sys.stdout`.

    Returns:
        A new, not yet started renderer.

    Raises:
        ValueError: If `BURNISH_RENDERER` holds another value.
    """
    choice = os.environ.get(RENDERER_ENV, "auto").strip().lower() or "auto"
    if choice not in _CHOICES:
        raise ValueError(
            f"`{RENDERER_ENV}` must be one of {_CHOICES}. "
            f"Received: {RENDERER_ENV}={os.environ[RENDERER_ENV]!r}. "
            "Unset it to choose by terminal or notebook."
        )
    if choice == "notebook" or (choice == "auto" and stream is None and in_notebook()):
        return NotebookMetricsRenderer(file=stream)
    stream = stream or sys.stdout
    if choice == "tui":
        return TuiMetricsRenderer(console=terminal_console(stream, force_terminal=True))
    if choice == "cli" or not _is_terminal(stream):
        return CliMetricsRenderer(file=stream)
    return TuiMetricsRenderer(console=terminal_console(stream))


def _is_terminal(stream: TextIO) -> bool:
    if os.environ.get("TERM", "") in ("", "dumb"):
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

"""The full-screen dashboard (Burn's TUI): state, panels, plots, keyboard and the renderer."""

from burnish.train.renderer.tui.renderer import TuiMetricsRenderer, terminal_console

__all__ = ["TuiMetricsRenderer", "terminal_console"]

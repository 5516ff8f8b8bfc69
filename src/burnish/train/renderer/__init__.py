"""Renderers: what the learner shows while it trains (Burn's `burn_train::renderer`).

`TuiMetricsRenderer` is the full-screen dashboard; `CliMetricsRenderer` prints plain lines for
logs and CI; `NotebookMetricsRenderer` keeps a live display in a Jupyter notebook;
`NullRenderer` shows nothing; `default_renderer()` picks one for the current terminal or
notebook.
"""

from burnish.train.renderer.base import MetricsRenderer, RenderSnapshot, TrainingProgress
from burnish.train.renderer.burn_trait import (
    BurnMetricsRenderer,
    EvaluationName,
    MetricDefinition,
    MetricsRendererEvaluation,
    MetricsRendererTraining,
    MetricState,
)
from burnish.train.renderer.cli import CliMetricsRenderer
from burnish.train.renderer.default import RENDERER_ENV, default_renderer
from burnish.train.renderer.notebook import NotebookMetricsRenderer
from burnish.train.renderer.null import NullRenderer
from burnish.train.renderer.tui import TuiMetricsRenderer

__all__ = [
    "RENDERER_ENV",
    "BurnMetricsRenderer",
    "CliMetricsRenderer",
    "EvaluationName",
    "MetricDefinition",
    "MetricState",
    "MetricsRenderer",
    "MetricsRendererEvaluation",
    "MetricsRendererTraining",
    "NotebookMetricsRenderer",
    "NullRenderer",
    "RenderSnapshot",
    "TrainingProgress",
    "TuiMetricsRenderer",
    "default_renderer",
]

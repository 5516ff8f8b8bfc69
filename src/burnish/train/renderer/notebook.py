"""Training progress inside a Jupyter notebook (an IPython kernel).

The terminal dashboard cannot draw in a notebook's output area (it would leave raw escape
codes), and the CLI's progress lines only come every ten seconds. In a notebook,
`NotebookMetricsRenderer` keeps one live display, updated in place through an IPython display
handle (HTML, with a plain-text twin for front ends without HTML), and prints the CLI's plain
lines for what stays: the header, the model summary, one line per epoch of each split, and
messages. `default_renderer()` picks it inside an IPython kernel; `show_summary` shows the
LearnerSummary as an HTML table there.
"""

from __future__ import annotations

import html
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from burnish.train.interrupter import Interrupter
from burnish.train.renderer.base import (
    MetricsRenderer,
    RenderSnapshot,
    check_split,
    format_value,
    printable,
)
from burnish.train.renderer.cli import CliMetricsRenderer
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary

__all__ = ["NotebookMetricsRenderer", "in_notebook", "show_summary"]

Display = Callable[..., Any]
"""`IPython.display.display`'s signature: `display(bundle, raw=True, display_id=True)` returns
a handle with `update(bundle, raw=True)`."""


def in_notebook() -> bool:
    """Whether this process is an IPython kernel (Jupyter, JupyterLab, VS Code, Colab).

    Cheap and import-free outside a kernel: only a loaded `ipykernel` is looked at.
    """
    if "ipykernel" not in sys.modules:
        return False
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    shell = get_ipython() if callable(get_ipython) else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def show_summary(summary: Any) -> None:
    """Show a LearnerSummary: an HTML table in a notebook, else its text on stdout."""
    if not in_notebook():
        print(summary)
        return
    from IPython.display import display

    display({"text/plain": str(summary), "text/html": summary._repr_html_()}, raw=True)


class NotebookMetricsRenderer(MetricsRenderer):
    """A live progress display in a notebook and the CLI's epoch lines; no ANSI codes.

    Args:
        refresh_interval_s: Seconds between two updates of the display (the learner reads
            metric values back at this rate).
        display: `IPython.display.display` (default) or a function with its signature.
        file: Where the plain lines go (default: `sys.stdout` at the time of printing).
        clock: A monotonic clock in seconds.

    Example:
        >>> learner = builder.renderer(NotebookMetricsRenderer()).build(...)  # doctest: +SKIP
    """

    def __init__(
        self,
        refresh_interval_s: float = 0.25,
        display: Display | None = None,
        file: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not refresh_interval_s > 0:
            raise ValueError(
                "`refresh_interval_s` must be > 0. "
                f"Received: refresh_interval_s={refresh_interval_s!r}."
            )
        self.refresh_interval_s = float(refresh_interval_s)
        self._display = display
        self._clock = clock
        self._lines = CliMetricsRenderer(interval_s=None, file=file, clock=clock)
        self._handle: Any = None
        self._next_due = 0.0
        self._test_name: str | None = None
        self._num_epochs = 0

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Print the run's header and open the live display."""
        self._lines.start(num_epochs, interrupter)
        self._num_epochs = num_epochs
        self._open(f"Training for {num_epochs} epoch{'s' if num_epochs > 1 else ''}")

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Print which data set is evaluated and open a live display for it."""
        self._lines.start_test(name, interrupter)
        self._test_name = name
        self._open(f"Evaluating {name}")

    def due(self) -> bool:
        """True at most once per refresh interval (one clock read per call)."""
        now = self._clock()
        if now < self._next_due:
            return False
        self._next_due = now + self.refresh_interval_s
        return True

    def render(self, snapshot: RenderSnapshot) -> None:
        """Update the display with the snapshot's progress and values."""
        check_split(snapshot.split, tuple(Split))
        progress = snapshot.progress
        fraction = progress.fraction if progress.items_total > 0 else None
        numeric = snapshot.numeric.items()
        rows = [(name, format_value(c), format_value(r)) for name, (c, r) in numeric]
        rows += [(name, value, "") for name, value in snapshot.text.items()]
        self._update(self._lines.progress_line(snapshot), fraction, rows)

    def start_split(self, split: Split) -> None:
        """Time `split`'s epoch line from now."""
        self._lines.start_split(split)

    def end_epoch(self, split: Split | str, epoch: int, values: dict[str, float]) -> None:
        """Print the epoch's line and show the split's final values in the display."""
        split = check_split(split, tuple(Split))
        self._lines.end_epoch(split, epoch, values)
        label = self._label(split)
        head = label if split == Split.TEST else f"{label} epoch {epoch}/{self._num_epochs}"
        rows = [(name, "", format_value(value)) for name, value in values.items()]
        self._update(f"{head} done", 1.0, rows)

    def model_summary(self, summary: ModelSummary) -> None:
        """Print the model's parameter table."""
        self._lines.model_summary(summary)

    def message(self, text: str) -> None:
        """Print `text` on a line of its own."""
        self._lines.message(text)

    def close(self) -> None:
        """Say why training stopped early, if it did; the display keeps its last state."""
        self._lines.close()
        self._handle = None

    # -- the display ---------------------------------------------------------------------

    def _open(self, title: str) -> None:
        if self._display is None:
            self._display = _ipython_display()
        self._handle = self._display(_bundle(title, None, []), raw=True, display_id=True)
        self._next_due = 0.0

    def _update(self, line: str, fraction: float | None, rows: list[tuple[str, str, str]]) -> None:
        if self._handle is not None:
            self._handle.update(_bundle(line, fraction, rows), raw=True)

    def _label(self, split: Split) -> str:
        if split == Split.TEST and self._test_name is not None:
            return f"[test {self._test_name}]"
        return f"[{split}]"


def _ipython_display() -> Display:
    try:
        from IPython.display import display
    except ImportError as error:
        raise ImportError(
            "NotebookMetricsRenderer needs IPython (a Jupyter kernel): install it with "
            "`pip install ipykernel`, or use CliMetricsRenderer()."
        ) from error
    return display


def _bundle(line: str, fraction: float | None, rows: list[tuple[str, str, str]]) -> dict[str, str]:
    """The display's MIME bundle: HTML (a progress bar and the values), and plain text."""
    value = "" if fraction is None else f' value="{fraction:.4f}" max="1"'
    line = printable(line)  # user text (metric names, text metrics) stays one line, no codes
    table = ""
    if rows:
        cells = "".join(
            "<tr>" + "".join(f"<td>{html.escape(printable(cell))}</td>" for cell in row) + "</tr>"
            for row in rows
        )
        table = (
            "<table><thead><tr><th>Metric</th><th>batch</th><th>epoch</th></tr></thead>"
            f"<tbody>{cells}</tbody></table>"
        )
    markup = (
        f'<div class="burnish-progress"><code>{html.escape(line)}</code><br>'
        f'<progress style="width: 100%"{value}></progress>{table}</div>'
    )
    return {"text/plain": line, "text/html": markup}

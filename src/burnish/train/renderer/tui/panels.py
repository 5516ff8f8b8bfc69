"""The TUI's panels as rich renderables, built from a `DashboardState` (Burn's TUI layout).

Every builder copies what it needs out of the state, so the result can be drawn later
without holding the state's lock.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.layout import Layout
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from burnish.train.renderer.tui.dashboard import DashboardState
from burnish.train.renderer.tui.plot import LinePlot, PlotSeries
from burnish.train.renderer.tui.progress import format_eta
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary

__all__ = [
    "build_dashboard",
    "format_compact",
    "controls_panel",
    "metrics_panel",
    "plot_panel",
    "progress_panel",
    "status_panel",
]

SPLIT_STYLES = {Split.TRAIN: "bright_red", Split.VALID: "bright_blue", Split.TEST: "bright_green"}
SPLIT_LABELS = {Split.TRAIN: "Train", Split.VALID: "Valid", Split.TEST: "Test"}
MODE_LABELS = {Split.TRAIN: "Training", Split.VALID: "Validating", Split.TEST: "Testing"}


def build_dashboard(state: DashboardState) -> Layout:
    """The whole screen: metrics, status and controls left, the plot right, progress below."""
    root = Layout()
    root.split_column(Layout(name="main", ratio=1), Layout(progress_panel(state), size=3))
    left = Layout(name="left", ratio=45)
    root["main"].split_row(left, Layout(plot_panel(state), ratio=55))
    status_height = 8 if state.stopping else 7
    left.split_column(
        Layout(metrics_panel(state), ratio=1),
        Layout(status_panel(state), size=status_height),
        Layout(controls_panel(state.keys), size=3),
    )
    return root


def format_compact(value: float) -> str:
    """A metric value in at most 8 characters (9 with a sign): 4 significant digits.

    Example:
        >>> [format_compact(v) for v in (0.312414, 91.0, 12345.6, 2e-5, 0.0012345)]
        ['0.3124', '91', '12346', '2.00e-05', '0.001235']
    """
    value = float(value)
    magnitude = abs(value)
    if not math.isfinite(value) or value == 0.0:
        return str(value) if value else "0"
    if not 1e-3 <= magnitude < 1e5:
        return f"{value:.2e}"
    decimals = max(0, 3 - math.floor(math.log10(magnitude)))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def metrics_panel(state: DashboardState) -> Panel:
    """Per numeric metric and split: the last batch's value and the epoch's running value."""
    # One space between columns: four value columns and a readable name fit in 50 cells.
    table = Table(box=None, padding=(0, 0, 0, 1), pad_edge=False, expand=True, header_style="bold")
    table.add_column(
        "Metric", style="bold yellow", no_wrap=True, overflow="ellipsis", ratio=1, min_width=8
    )
    columns = state.columns()
    for split in columns:
        for column in ("batch", "epoch"):
            header = Text(f"{SPLIT_LABELS[split]}\n{column}", style=SPLIT_STYLES[split])
            table.add_column(header, justify="right", no_wrap=True)
    for name in state.history.names:
        cells = []
        for split in columns:
            values = state.splits[split].numeric.get(name) or (None, None)
            cells += ["-" if value is None else format_compact(value) for value in values]
        table.add_row(_plain(name), *cells)
    parts: list[RenderableType] = [table]
    for name in state.text_names():
        line = Text(f"{printable(name)}: ", style="bold yellow", no_wrap=True, overflow="ellipsis")
        for split in columns:
            value = state.splits[split].text.get(name)
            if value is not None:
                line.append(f"{SPLIT_LABELS[split]} ", style=SPLIT_STYLES[split])
                line.append(f"{printable(value)}  ")
        parts.append(line)
    return Panel(Group(*parts), title="Metrics", title_align="left")


def status_panel(state: DashboardState) -> Panel:
    """Mode, epoch, iteration, items and elapsed time; the stop reason while stopping."""
    progress = state.splits[state.mode].progress
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style="bold yellow", no_wrap=True, width=9)
    grid.add_column(overflow="ellipsis", no_wrap=True, ratio=1)
    grid.add_row("Mode", MODE_LABELS[state.mode] + (" (finished)" if state.finished else ""))
    if state.mode == Split.TEST and state.test_name is not None:
        grid.add_row("Data", _plain(state.test_name))
        grid.add_row("Iteration", str(progress.iteration) if progress else "-")
        items = f"{progress.items_processed}/{progress.items_total}" if progress else "-"
        grid.add_row("Items", items)
    elif progress is None:  # no iteration shown yet (e.g. a gather longer than the epoch)
        done = state.splits[state.mode].epoch_done
        grid.add_row("Epoch", f"{done or '-'}/{state.num_epochs}")
        grid.add_row("Iteration", "-")
        grid.add_row("Items", "-")
    else:
        grid.add_row("Epoch", f"{progress.epoch}/{progress.epoch_total}")
        grid.add_row("Iteration", str(progress.iteration))
        percent = f" ({progress.fraction:.0%})" if progress.items_total > 0 else ""
        grid.add_row("Items", f"{progress.items_processed}/{progress.items_total}{percent}")
    grid.add_row("Elapsed", format_eta(state.clock() - state.started))
    if state.model is not None:
        grid.add_row("Model", _plain(state.model))
    if state.stopping:
        grid.add_row(Text("Stopping", style="bold red"), _plain(state.stopping, style="red"))
    return Panel(grid, title="Status", title_align="left")


def model_line(summary: ModelSummary) -> str:
    """`Model · 1,234 params (1,000 trainable) · 0.01 MiB`, for the status panel."""
    trainable = "" if summary.trainable is None else f" ({summary.trainable:,} trainable)"
    name = summary.model or "model"
    return f"{name} · {summary.total:,} params{trainable} · {summary.size_mib:.2f} MiB"


def controls_panel(keys: bool = True) -> Panel:
    """The keys the dashboard understands (↑/↓ toggle full history and current epoch).

    Args:
        keys: Whether keys are read; if not (the terminal belongs to another program, e.g.
            under `timeout`, which runs its command as a background job), how to stop
            instead: SIGINT to this process. Ctrl-C reaches only the terminal's foreground
            job, which this process then is not, so it is not offered first.
    """
    if keys:
        text = Text.assemble(
            ("←/→", "bold"), " metric  ", ("↑/↓", "bold"), " view  ", ("q", "bold"), " stop"
        )
    else:
        text = Text.assemble(
            (f"kill -INT {os.getpid()}", "bold"),
            " stop · keys not read here (Ctrl-C reaches only the foreground job)",
        )
    return Panel(text, title="Controls", title_align="left")


def progress_panel(state: DashboardState) -> Panel:
    """The overall training progress (train items over all epochs) and its ETA; during an
    evaluation, the evaluated data set's."""
    fraction = state.estimate.fraction
    remaining = state.estimate.remaining_s()
    if state.mode == Split.TEST:
        fraction, remaining = _test_progress(state)
    grid = Table.grid(expand=True, padding=(0, 1))
    grid.add_column(ratio=1)
    grid.add_column(no_wrap=True, justify="right")
    bar_style = "red" if state.stopping else "yellow"
    bar = ProgressBar(total=1.0, completed=fraction, complete_style=bar_style)
    eta = "stopping..." if state.stopping else f"ETA {format_eta(remaining)}"
    grid.add_row(bar, f"{fraction:5.1%} ({eta})")
    return Panel(grid, title="Progress", title_align="left")


def _test_progress(state: DashboardState) -> tuple[float, float | None]:
    """The evaluated fraction of the data set and the seconds left at the rate so far."""
    progress = state.splits[Split.TEST].progress
    fraction = progress.fraction if progress is not None else 0.0
    if state.splits[Split.TEST].epoch_done:
        return 1.0, 0.0
    if fraction <= 0.0:
        return 0.0, None
    elapsed = state.clock() - state.test_started
    return fraction, elapsed * (1.0 - fraction) / fraction


def plot_panel(state: DashboardState) -> Panel:
    """The selected metric's train and valid lines, with the metric tabs on top."""
    name = state.selected_name
    if name is None:
        return Panel(Text("waiting for metrics...", style="dim"), title="Plot", title_align="left")
    points = state.history.series(name, recent=state.recent)
    series = [
        PlotSeries(SPLIT_LABELS[split], points[split], SPLIT_STYLES[split])
        for split in Split
        if split in points
    ]
    if state.recent:
        plot = LinePlot(series, x_label="fraction of the current epoch", x_range=(0.0, 1.0))
    else:
        x_high = max((x for line in series for x, _ in line.points), default=1.0)
        plot = LinePlot(series, x_label="epoch", x_range=(0.0, max(x_high, 1e-9)))
    kind = "current epoch" if state.recent else "full history"
    tabs = _tab_strip(state.history.names, state.selected % len(state.history.names))
    title = _plain(f"Plot: {name} ({kind})")
    return Panel(_Stacked(tabs, plot), title=title, title_align="left")


def printable(text: str) -> str:
    """`text` with control characters (line breaks, escapes) as spaces: one line, no codes."""
    return "".join(char if char.isprintable() else " " for char in str(text))


def _plain(text: str, style: str = "") -> Text:
    """User text (a metric name, a stop reason) as it is: never read as rich markup."""
    return Text(printable(text), style=style)


def _tab_strip(names: list[str], selected: int) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for index, name in enumerate(names):
        if index:
            text.append(" │ ", style="dim")
        text.append(printable(name), style="bold reverse yellow" if index == selected else "yellow")
    return text


class _Stacked:
    """A one-line header above a renderable that gets the remaining height."""

    def __init__(self, header: Text, body: LinePlot) -> None:
        self.header = header
        self.body = body

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.header
        height = (options.height or self.body.height + 1) - 1
        yield from console.render(self.body, options.update(height=max(height, 1)))

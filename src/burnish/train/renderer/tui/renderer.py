"""The terminal dashboard (Burn's `TuiMetricsRenderer`), drawn with rich on the alternate screen."""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TextIO, cast

from rich.console import Console, ConsoleDimensions
from rich.live import Live

from burnish.train.interrupter import Interrupter
from burnish.train.renderer.base import (
    MetricsRenderer,
    RenderSnapshot,
    check_num_epochs,
    check_split,
)
from burnish.train.renderer.cli import CliMetricsRenderer
from burnish.train.renderer.tui.dashboard import DashboardState
from burnish.train.renderer.tui.keyboard import KeyReader
from burnish.train.renderer.tui.panels import build_dashboard, model_line
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary

__all__ = ["FALLBACK_MESSAGE", "TuiMetricsRenderer", "terminal_console"]

STOP_REASON = "Training stopped by the user (q)"
FALLBACK_MESSAGE = (
    "burnish: the dashboard failed to draw ({error}). Training goes on, shown as plain progress "
    "lines; press Ctrl-C to stop it. This is a bug in burnish: please report it with this "
    "traceback:\n{traceback}"
)
_TICK_S = 0.05  # how often the UI thread looks at keys and the stop flag
_IDLE_REDRAW_S = 1.0  # redraw this often even without news, so elapsed time and ETA move
_DRAW_BUDGET = 0.05  # at most this fraction of wall time goes to drawing (slows the refresh)


class TuiMetricsRenderer(MetricsRenderer):
    """A full-screen dashboard: metrics, status, a plot per numeric metric and a progress bar.

    A background thread owns the screen: it reads keys (←/→ switch the plotted metric, ↑/↓
    toggle full/recent history, `q` asks the interrupter to stop after the current iteration)
    and redraws at most every `refresh_interval_s`. The learner's thread only stores values, so
    drawing never runs in the training loop; when a frame is slow to draw (small machine, huge
    terminal) the refresh slows down so drawing stays under 5% of the wall time. The terminal
    is restored by `close()`, at exit, and before an uncaught exception's traceback prints.
    If drawing ever fails (a bug), the dashboard leaves the screen at once, says so with the
    traceback on stderr, and training goes on with a `CliMetricsRenderer` on the same stream.

    Args:
        refresh_interval_s: Seconds between two redraws (and between two `due()` == True).
        console: The rich console to draw on (default: a new one on stdout).
        read_keys: Whether to read keys from stdin when it is a terminal this process may
            read (`keyboard.may_read`: it has the foreground); if not, the controls panel shows
            how to stop instead (Ctrl-C, or SIGINT to this process).

    Example:
        >>> renderer = TuiMetricsRenderer()  # doctest: +SKIP
        >>> learner = builder.renderer(renderer).build(...)  # doctest: +SKIP
    """

    def __init__(
        self,
        refresh_interval_s: float = 0.1,
        console: Console | None = None,
        read_keys: bool = True,
    ) -> None:
        if not refresh_interval_s > 0:
            raise ValueError(
                "`refresh_interval_s` must be > 0. "
                f"Received: refresh_interval_s={refresh_interval_s!r}."
            )
        self.refresh_interval_s = float(refresh_interval_s)
        self._interval = self.refresh_interval_s  # widened when drawing is slow
        self._console = console
        self._read_keys = read_keys
        self._lock = threading.Lock()
        self._stop_drawing = threading.Event()
        self._next_due = 0.0
        self._dirty = False
        self._state: DashboardState | None = None
        self._interrupter: Interrupter | None = None
        self._live: Live | None = None
        self._keys: KeyReader | None = None
        self._thread: threading.Thread | None = None
        self._previous_excepthook: Callable[..., Any] | None = None
        self._num_epochs = 0
        self._fallback: CliMetricsRenderer | None = None
        self._held: list[str] = []  # messages said while the dashboard covers the terminal
        self.fell_back = threading.Event()
        """Set once drawing failed and plain progress lines took over."""

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Enter the alternate screen, put stdin in cbreak mode and start the UI thread."""
        check_num_epochs(num_epochs)
        if self._live is not None:
            raise RuntimeError("`TuiMetricsRenderer.start` was called twice; call `close` first.")
        self._state = DashboardState(num_epochs)
        self._num_epochs = num_epochs
        self._interrupter = interrupter
        self._stop_drawing.clear()
        self._live = Live(
            build_dashboard(self._state),
            console=self._console or terminal_console(),
            screen=True,
            auto_refresh=False,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._previous_excepthook = sys.excepthook
        sys.excepthook = self._excepthook
        atexit.register(self.close)
        self._keys = KeyReader.for_stdin() if self._read_keys else None
        self._state.keys = self._keys is not None
        try:
            self._live.start(refresh=True)
        except Exception:
            self._fall_back(self._live)
            return
        except BaseException:
            self.close()
            raise
        self._thread = threading.Thread(target=self._ui_loop, name="burnish-tui", daemon=True)
        self._thread.start()

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Show the evaluation of the data set `name` (starting the dashboard if needed)."""
        if self._live is None and self._fallback is None:
            self.start(1, interrupter)
        self._interrupter = interrupter
        with self._lock:
            fallback = self._fallback
            if fallback is None and self._state is not None:
                self._state.start_test(name)
                self._dirty = True
        if fallback is not None:
            fallback.start_test(name, interrupter)

    def due(self) -> bool:
        """True at most once per refresh interval (one clock read per call)."""
        fallback = self._fallback
        if fallback is not None:
            return fallback.due()
        now = time.monotonic()
        if now < self._next_due:
            return False
        self._next_due = now + self._interval
        return True

    def render(self, snapshot: RenderSnapshot) -> None:
        """Store the snapshot; the UI thread draws it within `refresh_interval_s`."""
        check_split(snapshot.split, tuple(Split))
        if self._state is None:
            return
        with self._lock:
            fallback = self._fallback
            if fallback is None:
                self._state.update(snapshot)
                self._dirty = True
        if fallback is not None:
            fallback.render(snapshot)

    def end_epoch(self, split: Split | str, epoch: int, values: dict[str, float]) -> None:
        """Show the epoch's final values in the metrics panel."""
        split = check_split(split, tuple(Split))
        if self._state is None:
            return
        with self._lock:
            fallback = self._fallback
            if fallback is None:
                self._state.end_epoch(split, epoch, values)
                self._dirty = True
        if fallback is not None:
            fallback.end_epoch(split, epoch, values)

    def model_summary(self, summary: ModelSummary) -> None:
        """Show the model's size in the status panel."""
        if self._state is None:
            return
        with self._lock:
            self._state.model = model_line(summary)
            self._dirty = True

    def message(self, text: str) -> None:
        """Print `text` on the terminal; while the dashboard covers it (the alternate screen),
        `text` is printed once the dashboard has left (`close`)."""
        if self._fallback is not None:
            self._fallback.message(text)
        elif self._live is not None:
            self._held.append(text)
        else:
            (self._console or terminal_console()).print(text, markup=False, highlight=False)

    def close(self) -> None:
        """Stop the UI thread, restore the terminal and leave the alternate screen."""
        live, self._live = self._live, None
        if live is None:
            return
        self._stop_drawing.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        try:
            if self._fallback is None and self._state is not None:
                try:
                    with self._lock:
                        self._sync_stop(self._state)
                        self._state.finished = True
                        screen = build_dashboard(self._state)
                    live.update(screen, refresh=True)
                except Exception:
                    self._fall_back(live)
        finally:
            try:
                live.stop()
            finally:
                if self._keys is not None:
                    self._keys.close()
                    self._keys = None
                if sys.excepthook == self._excepthook:
                    sys.excepthook = self._previous_excepthook or sys.__excepthook__
                atexit.unregister(self.close)
                held, self._held = self._held, []
                for text in held:
                    live.console.print(text, markup=False, highlight=False)
        if self._fallback is not None:
            self._fallback.close()

    def _fall_back(self, live: Live | None) -> None:
        """Drawing failed: leave the screen, say so at once, go on with plain progress lines.

        Called with the exception being handled; said once, whoever fails first.
        """
        error = traceback.format_exc()
        with self._lock:
            if self._fallback is not None:
                return
            console = live.console if live is not None else None
            if live is not None:
                with contextlib.suppress(Exception):  # the terminal first, whatever happens
                    live.stop()
            if self._keys is not None:
                self._keys.close()
                self._keys = None
            summary = error.rstrip().splitlines()[-1]
            print(FALLBACK_MESSAGE.format(error=summary, traceback=error), file=sys.stderr)
            sys.stderr.flush()
            stream = cast("TextIO", console.file) if console is not None else None
            fallback = CliMetricsRenderer(file=stream)
            if self._interrupter is not None:
                fallback.start(self._num_epochs, self._interrupter)
            self._fallback = fallback
        self.fell_back.set()

    def _sync_stop(self, state: DashboardState) -> bool:
        """Show a stop request (from `q`, Ctrl-C or the learner); returns whether it is new."""
        interrupter = self._interrupter
        if interrupter is None or not interrupter.should_stop() or state.stopping is not None:
            return False
        state.stopping = interrupter.reason or "stop requested"
        return True

    def _excepthook(
        self,
        exc_type: type[BaseException],
        exc: BaseException,
        tb: TracebackType | None,
    ) -> None:
        self.close()
        (self._previous_excepthook or sys.__excepthook__)(exc_type, exc, tb)

    def _ui_loop(self) -> None:
        last_draw = float("-inf")
        while not self._stop_drawing.is_set():
            try:
                keys = self._keys.read(_TICK_S) if self._keys else []
                if self._keys is None:
                    self._stop_drawing.wait(_TICK_S)
                started = time.monotonic()
                if self._step(keys, started - last_draw):
                    last_draw = time.monotonic()
                    cost = (last_draw - started) / _DRAW_BUDGET
                    self._interval = max(self.refresh_interval_s, min(cost, _IDLE_REDRAW_S))
            except Exception:  # a drawing bug must not take the training run down
                self._fall_back(self._live)
                return

    def _step(self, keys: list[str], since_draw: float) -> bool:
        """Apply keys and the stop flag, then redraw if needed; returns whether it drew."""
        state, live, interrupter = self._state, self._live, self._interrupter
        if state is None or live is None or interrupter is None:
            return False
        if "q" in keys and not interrupter.should_stop():
            interrupter.stop(STOP_REASON)
        with self._lock:
            changed = any([state.on_key(key) for key in keys])
            changed = self._sync_stop(state) or changed
            redraw = (
                changed
                or (self._dirty and since_draw >= self._interval)
                or since_draw >= _IDLE_REDRAW_S
            )
            if not redraw:
                return False
            self._dirty = False
            screen = build_dashboard(state)
        live.update(screen, refresh=True)
        return True


class _TerminalConsole(Console):
    """A console as large as its terminal is now, whatever `COLUMNS`/`LINES` say."""

    @property  # type: ignore[misc]  # rich lets `size` be set; this console never does
    def size(self) -> ConsoleDimensions:
        try:
            width, height = os.get_terminal_size(self.file.fileno())
        except (AttributeError, OSError, ValueError):
            return super().size
        return ConsoleDimensions(width, height)


def terminal_console(file: TextIO | None = None, force_terminal: bool | None = None) -> Console:
    """A rich console for the dashboard, sized by the terminal behind `file` (default stdout).

    Args:
        file: The stream to draw on; default `sys.stdout`.
        force_terminal: Draw with terminal control codes even if `file` is not a TTY.
    """
    return _TerminalConsole(file=file, force_terminal=force_terminal)

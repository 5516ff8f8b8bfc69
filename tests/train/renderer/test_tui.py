import io
import sys

import pytest
from rich.console import Console

from burnish.train.interrupter import Interrupter
from burnish.train.renderer import RenderSnapshot, TrainingProgress, TuiMetricsRenderer

ENTER_ALT_SCREEN, LEAVE_ALT_SCREEN, HOME = "\x1b[?1049h", "\x1b[?1049l", "\x1b[H"


def make() -> tuple[TuiMetricsRenderer, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, height=30, color_system=None)
    # A long refresh interval: only the first `due()` is True and the UI thread stays idle.
    return TuiMetricsRenderer(refresh_interval_s=1000.0, console=console, read_keys=False), out


def last_frame(output: str) -> str:
    return output.rsplit(HOME, 1)[1]


def test_draws_on_the_alternate_screen_and_leaves_it():
    renderer, out = make()
    hook = sys.excepthook
    renderer.start(2, Interrupter())
    assert sys.excepthook != hook
    assert renderer.due() is True
    assert renderer.due() is False
    progress = TrainingProgress(1, 2, 7, 70, 100)
    renderer.render(RenderSnapshot("train", progress, {"Loss": (0.25, 0.375)}, {"Speed": "3/s"}))
    renderer.end_epoch("train", 1, {"Loss": 0.3125})
    renderer.close()
    renderer.close()  # idempotent
    output = out.getvalue()
    assert output.startswith(ENTER_ALT_SCREEN)
    assert output.rstrip().endswith(LEAVE_ALT_SCREEN) or LEAVE_ALT_SCREEN in output[-50:]
    frame = last_frame(output)
    assert "Training (finished)" in frame
    assert "Plot: Loss (full history)" in frame
    assert "0.25" in frame and "0.3125" in frame and "Speed: Train 3/s" in frame
    assert "70/100 (70%)" in frame
    assert sys.excepthook == hook


def test_a_stop_request_is_on_the_last_frame():
    renderer, out = make()
    interrupter = Interrupter()
    with renderer:
        renderer.start(1, interrupter)
        interrupter.stop("interrupted (Ctrl-C); press Ctrl-C again to abort")
    frame = last_frame(out.getvalue())
    assert "Stopping  interrupted (Ctrl-C)" in frame
    assert "(stopping...)" in frame


def test_an_uncaught_exception_restores_the_terminal_before_its_traceback(capsys):
    renderer, out = make()
    renderer.start(1, Interrupter())
    try:
        raise ValueError("boom")
    except ValueError:
        sys.excepthook(*sys.exc_info())
    assert LEAVE_ALT_SCREEN in out.getvalue()
    assert "ValueError: boom" in capsys.readouterr().err
    renderer.close()
    assert out.getvalue().count(LEAVE_ALT_SCREEN) == 1


def test_invalid_use_is_rejected():
    with pytest.raises(ValueError, match=r"`refresh_interval_s` must be > 0\. Received: refresh"):
        TuiMetricsRenderer(refresh_interval_s=0)
    renderer, _ = make()
    with pytest.raises(ValueError, match=r"`num_epochs` must be an int >= 1\. Received: num_ep"):
        renderer.start(0, Interrupter())
    renderer.start(1, Interrupter())
    try:
        with pytest.raises(RuntimeError, match=r"`TuiMetricsRenderer.start` was called twice"):
            renderer.start(1, Interrupter())
        with pytest.raises(ValueError, match=r"`split` must be one of"):
            renderer.render(RenderSnapshot("test", TrainingProgress(1, 1, 1, 1, 1)))
    finally:
        renderer.close()


def test_a_message_without_a_run_is_printed_plainly():
    renderer, out = make()  # not started: `fit` of a run that had already ended
    renderer.message("Training is already complete: 3 epochs [final]")
    renderer.close()
    assert out.getvalue() == "Training is already complete: 3 epochs [final]\n"

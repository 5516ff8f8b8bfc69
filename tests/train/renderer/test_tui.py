import io
import sys

import pytest
from rich.console import Console

from burnish.train.interrupter import Interrupter
from burnish.train.renderer import RenderSnapshot, TrainingProgress, TuiMetricsRenderer
from burnish.train.renderer.tui.panels import build_dashboard

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
            renderer.render(RenderSnapshot("holdout", TrainingProgress(1, 1, 1, 1, 1)))
    finally:
        renderer.close()


def test_a_message_without_a_run_is_printed_plainly():
    renderer, out = make()  # not started: `fit` of a run that had already ended
    renderer.message("Training is already complete: 3 epochs [final]")
    renderer.close()
    assert out.getvalue() == "Training is already complete: 3 epochs [final]\n"


def test_a_message_during_a_run_is_printed_once_the_dashboard_has_left():
    renderer, out = make()
    renderer.start(1, Interrupter())
    renderer.message("Non-finite loss (nan) at epoch 1, iteration 5 [said]")
    assert "[said]" not in out.getvalue()  # the alternate screen would swallow it
    renderer.close()
    output = out.getvalue()
    assert output.count("[said]") == 1
    assert output.index("[said]") > output.rindex(LEAVE_ALT_SCREEN)


def test_a_drawing_failure_switches_to_plain_lines_at_once(monkeypatch, capsys):
    """A bug in drawing must not freeze the screen: leave it, say so once, print plain lines."""
    import burnish.train.renderer.tui.renderer as tui_renderer

    draws = []

    def failing_after_the_first(state):
        draws.append(state)
        if len(draws) > 1:
            raise ValueError("max() arg is an empty sequence")
        return build_dashboard(state)

    monkeypatch.setattr(tui_renderer, "build_dashboard", failing_after_the_first)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, height=30, color_system=None)
    renderer = TuiMetricsRenderer(refresh_interval_s=0.01, console=console, read_keys=False)
    interrupter = Interrupter()
    renderer.start(2, interrupter)  # the first frame draws
    assert renderer.fell_back.wait(timeout=60), "the UI thread never fell back"
    assert out.getvalue().count(LEAVE_ALT_SCREEN) == 1  # the screen was left at once
    err = capsys.readouterr().err
    assert err.count("burnish: the dashboard failed to draw") == 1
    assert "(ValueError: max() arg is an empty sequence)" in err
    assert "Traceback (most recent call last)" in err and "failing_after_the_first" in err
    assert "press Ctrl-C to stop" in err and "please report it" in err
    # Training goes on with plain lines on the dashboard's stream.
    renderer.end_epoch("train", 1, {"Loss": 0.5})
    interrupter.stop("stopped on purpose")
    renderer.close()
    plain = out.getvalue().split(LEAVE_ALT_SCREEN, 1)[1]
    assert "Training for 2 epochs." in plain
    assert "[train] epoch 1/2 done in" in plain and "Loss 0.5" in plain
    assert "Training stopped: stopped on purpose." in plain
    assert "failed to draw" not in capsys.readouterr().err  # said once
    assert sys.excepthook != renderer._excepthook


def test_an_evaluation_shows_the_test_split_by_name():
    from burnish.train.renderer.tui.dashboard import DashboardState
    from burnish.train.split import Split

    state = DashboardState(1)
    state.start_test("mnist-test")
    state.update(
        RenderSnapshot(Split.TEST, TrainingProgress(1, 1, 3, 300, 1000), {"Loss": (0.5, 0.6)})
    )
    assert state.columns() == [Split.TEST]
    console = Console(file=io.StringIO(), width=120, height=30, color_system=None)
    console.print(build_dashboard(state))
    screen = console.file.getvalue()
    assert "Testing" in screen and "mnist-test" in screen and "300/1000" in screen
    assert "Train" not in screen and "Valid" not in screen
    state.end_epoch(Split.TEST, 1, {"Loss": 0.55})
    assert state.splits[Split.TEST].numeric["Loss"] == (0.5, 0.55)

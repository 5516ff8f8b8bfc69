import io
import os

import pytest

from burnish.train.renderer import (
    RENDERER_ENV,
    CliMetricsRenderer,
    TuiMetricsRenderer,
    default_renderer,
)


@pytest.fixture
def terminal():
    """The writing end of a real pseudo-terminal, as a text stream."""
    master, slave = os.openpty()
    with os.fdopen(slave, "w") as stream:
        yield stream
    os.close(master)


def test_a_terminal_gets_the_dashboard(monkeypatch, terminal):
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert isinstance(default_renderer(terminal), TuiMetricsRenderer)


@pytest.mark.parametrize("term", ["dumb", ""])
def test_a_dumb_terminal_gets_plain_lines(monkeypatch, terminal, term):
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    monkeypatch.setenv("TERM", term)
    assert isinstance(default_renderer(terminal), CliMetricsRenderer)


def test_a_pipe_or_file_gets_plain_lines(monkeypatch):
    monkeypatch.delenv(RENDERER_ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert isinstance(default_renderer(io.StringIO()), CliMetricsRenderer)


def test_the_environment_variable_forces_a_renderer(monkeypatch, terminal):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv(RENDERER_ENV, "cli")
    assert isinstance(default_renderer(terminal), CliMetricsRenderer)
    monkeypatch.setenv(RENDERER_ENV, "TUI")
    assert isinstance(default_renderer(io.StringIO()), TuiMetricsRenderer)
    monkeypatch.setenv(RENDERER_ENV, "fancy")
    with pytest.raises(ValueError, match=r"`BURNISH_RENDERER` must be one of .*'fancy'"):
        default_renderer()

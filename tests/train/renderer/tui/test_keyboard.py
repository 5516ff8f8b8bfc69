import os
import subprocess
import sys

import pytest

from burnish.train.renderer.tui.keyboard import KeyReader, parse_keys

termios = pytest.importorskip("termios")


def test_parse_keys():
    assert parse_keys(b"\x1b[C\x1b[D\x1b[A\x1b[B") == ["right", "left", "up", "down"]
    assert parse_keys(b"\x1bOC\x1bOD") == ["right", "left"]  # application cursor mode
    assert parse_keys(b"lhqQx\x1b[5~") == ["right", "left", "q", "q"]  # unknown keys dropped


@pytest.fixture
def pty():
    master, slave = os.openpty()
    yield master, slave
    os.close(master)
    os.close(slave)


def test_reader_sets_cbreak_reads_keys_and_restores_the_terminal(pty):
    master, slave = pty
    before = termios.tcgetattr(slave)
    assert before[3] & termios.ICANON and before[3] & termios.ECHO
    reader = KeyReader(slave)
    modes = termios.tcgetattr(slave)[3]
    assert not modes & termios.ICANON and not modes & termios.ECHO
    assert modes & termios.ISIG  # Ctrl-C still raises SIGINT
    assert reader.read(0.0) == []
    os.write(master, b"\x1b[Cq")
    assert reader.read(5.0) == ["right", "q"]
    reader.close()
    assert termios.tcgetattr(slave) == before


def test_reader_needs_a_terminal(monkeypatch):
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as pipe:
        with pytest.raises(termios.error):
            KeyReader(read_end)
        monkeypatch.setattr(sys, "stdin", pipe)
        assert KeyReader.for_stdin() is None  # keys are simply not read
    os.close(write_end)


def test_a_guarded_reader_leaves_input_it_may_not_read(pty):
    """While its guard says no (another program has the terminal), the input stays queued."""
    master, slave = pty
    allowed = [False]
    reader = KeyReader(slave, guard=lambda fd: allowed[0])
    os.write(master, b"q")
    assert reader.read(0.01) == []
    allowed[0] = True
    assert reader.read(5.0) == ["q"]  # the same byte, still there
    reader.close()


def test_a_new_session_reads_no_terminal_its_parent_is_not_in_front_of(pty):
    """torchrun's workers run in a new session (no controlling terminal): they may read stdin
    only while their parent has the terminal's foreground. This test process has not."""
    _, slave = pty
    code = "from burnish.train.renderer.tui.keyboard import may_read; print(may_read(0))"
    result = subprocess.run([sys.executable, "-c", code], stdin=slave, start_new_session=True,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.stdout.strip() == "False", result.stderr
    assert os.isatty(slave)

import os
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

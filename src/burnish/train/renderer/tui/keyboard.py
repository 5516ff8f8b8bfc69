"""Key presses from the terminal, read without echo or line buffering (cbreak mode)."""

from __future__ import annotations

import contextlib
import os
import select
import sys
import time

__all__ = ["KeyReader", "parse_keys"]

# Arrow keys arrive as CSI sequences (ESC [ C) or, in application cursor mode, SS3 (ESC O C).
_ESCAPES = {
    b"\x1b[A": "up",
    b"\x1b[B": "down",
    b"\x1b[C": "right",
    b"\x1b[D": "left",
    b"\x1bOA": "up",
    b"\x1bOB": "down",
    b"\x1bOC": "right",
    b"\x1bOD": "left",
}
_CHARS = {b"q": "q", b"Q": "q", b"h": "left", b"l": "right", b"k": "up", b"j": "down"}


def parse_keys(data: bytes) -> list[str]:
    """Translate raw terminal input into key names (`left`, `right`, `up`, `down`, `q`).

    Unknown bytes and escape sequences are dropped.

    Example:
        >>> parse_keys(b"\\x1b[Cq")
        ['right', 'q']
    """
    keys = []
    index = 0
    while index < len(data):
        chunk = data[index : index + 3]
        if chunk in _ESCAPES:
            keys.append(_ESCAPES[chunk])
            index += 3
            continue
        key = _CHARS.get(data[index : index + 1])
        if key is not None:
            keys.append(key)
        index += 1
    return keys


class KeyReader:
    """Puts a terminal in cbreak mode and reads key presses from it; `close` restores it.

    Args:
        fd: The terminal's file descriptor (stdin's).
    """

    def __init__(self, fd: int) -> None:
        import termios
        import tty

        self.fd = fd
        self.eof = False
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd, termios.TCSANOW)

    @classmethod
    def for_stdin(cls) -> KeyReader | None:
        """A reader on stdin, or None when stdin is no terminal this process may configure.

        None when stdin is not a TTY, when `termios` is missing (Windows), or when the process
        runs in the background (changing the terminal would stop it with SIGTTOU).
        """
        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
                return None
            return cls(fd)
        except (AttributeError, ImportError, OSError, ValueError):
            return None

    def read(self, timeout_s: float) -> list[str]:
        """Wait up to `timeout_s` for input and return the keys that arrived."""
        if self.eof:
            time.sleep(timeout_s)
            return []
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if not ready:
            return []
        try:
            data = os.read(self.fd, 1024)
        except OSError:
            data = b""
        self.eof = not data  # a closed terminal stays readable: stop polling it
        return parse_keys(data)

    def close(self) -> None:
        """Restore the terminal settings saved when the reader was made (if it still exists)."""
        import termios

        with contextlib.suppress(termios.error):  # a vanished terminal needs no restoring
            termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)

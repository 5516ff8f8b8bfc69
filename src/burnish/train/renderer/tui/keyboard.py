"""Key presses from the terminal, read without echo or line buffering (cbreak mode)."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
import time
from collections.abc import Callable

__all__ = ["KeyReader", "may_read", "parse_keys"]

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
        guard: Checked before every read: keys are read only while it returns True (for stdin,
            `may_read`: a run moved to the background stops reading, and reads again when
            brought back). None reads whenever input arrives.
    """

    def __init__(self, fd: int, guard: Callable[[int], bool] | None = None) -> None:
        import termios
        import tty

        self.fd = fd
        self.eof = False
        self._guard = guard or (lambda fd: True)
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd, termios.TCSANOW)

    @classmethod
    def for_stdin(cls) -> KeyReader | None:
        """A reader on stdin, or None when stdin is no terminal this process may read.

        None when stdin is not a TTY, when `termios` is missing (Windows), or when another
        program has the terminal's foreground (`may_read`), e.g. under `timeout`, which runs
        its command in a background process group, or after `&`.
        """
        try:
            fd = sys.stdin.fileno()
            if not os.isatty(fd) or not may_read(fd):
                return None
            return cls(fd, guard=may_read)
        except (AttributeError, ImportError, OSError, ValueError):
            return None

    def read(self, timeout_s: float) -> list[str]:
        """Wait up to `timeout_s` for input and return the keys that arrived."""
        if self.eof or not self._guard(self.fd):
            time.sleep(timeout_s)
            return []
        ready, _, _ = select.select([self.fd], [], [], timeout_s)
        if not ready or not self._guard(self.fd):
            return []
        try:
            data = os.read(self.fd, 1024)
        except OSError:
            data = b""
        self.eof = not data  # a closed terminal stays readable: stop polling it
        return parse_keys(data)

    def close(self) -> None:
        """Restore the terminal settings saved when the reader was made (if it still exists).

        SIGTTOU is blocked meanwhile: a run moved to the background restores the terminal
        instead of being stopped for touching it.
        """
        import signal
        import termios

        blocked = {signal.SIGTTOU}
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        try:
            with contextlib.suppress(termios.error):  # a vanished terminal needs no restoring
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self._saved)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def may_read(fd: int) -> bool:
    """Whether this process may read the terminal `fd` now without stealing another's input.

    - The terminal is this process's controlling terminal: only in its foreground process
      group (a background read would stop the process with SIGTTIN).
    - It is not (a new session: torchrun starts every worker with `setsid`, so `/dev/tty`
      cannot even be opened, yet stdin is the terminal): only while the parent process (the
      launcher, e.g. torchrun's agent) is in the terminal's foreground process group, read
      from Linux's `/proc/<parent>/stat`; elsewhere, never.
    """
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError as error:
        if error.errno != errno.ENOTTY:  # ENOTTY: not our controlling terminal
            return False
    return _parent_in_foreground(fd)


def _parent_in_foreground(fd: int) -> bool:
    try:
        with open(f"/proc/{os.getppid()}/stat", encoding="ascii", errors="replace") as file:
            fields = file.read().rsplit(")", 1)[1].split()  # after the command's name
        process_group, terminal, foreground = int(fields[2]), int(fields[4]), int(fields[5])
        return terminal == os.fstat(fd).st_rdev and foreground == process_group > 0
    except (OSError, IndexError, ValueError):
        return False

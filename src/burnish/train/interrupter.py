"""Graceful stop of a training run (Burn's `Interrupter`)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Interrupter"]


class Interrupter:
    """A flag the learner checks after each iteration; `stop()` may be called from any thread.

    Example:
        >>> interrupter = Interrupter()
        >>> interrupter.stop("user asked")
        >>> interrupter.should_stop()
        True
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    def stop(self, reason: str | None = None) -> None:
        """Ask the learner to stop after the current iteration (with a checkpoint)."""
        self.reason = reason or self.reason
        self._event.set()

    def get_message(self) -> str | None:
        """Why the stop was asked for: the last reason given to `stop`, or None (Burn main's
        `Interrupter::get_message`; the learner logs "Training interrupted: <message>").

        Example:
            >>> interrupter = Interrupter()
            >>> interrupter.get_message() is None
            True
            >>> interrupter.stop("preempted")
            >>> interrupter.stop()  # no reason: the earlier one stays, as in Burn
            >>> interrupter.get_message()
            'preempted'
        """
        return self.reason

    def should_stop(self) -> bool:
        """Whether a stop was asked for."""
        return self._event.is_set()

    def reset(self) -> None:
        """Clear a previous stop request and its message (Burn's `reset` keeps the message)."""
        self.reason = None
        self._event.clear()

    @contextlib.contextmanager
    def catch_sigint(self) -> Iterator[None]:
        """Ctrl-C once: graceful stop after the current iteration; twice: `KeyboardInterrupt`.

        Only installs the handler in the main thread; elsewhere it is a no-op.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: FrameType | None) -> None:
            if self.should_stop():
                raise KeyboardInterrupt
            self.stop("interrupted (Ctrl-C); press Ctrl-C again to abort")

        previous = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

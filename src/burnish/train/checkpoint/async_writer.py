"""Checkpoint writes off the training loop's thread (Burn's `AsyncCheckpointer`).

The loop hands over a write (serialize a host snapshot, fsync, commit, then the deletions that
checkpoint decided) and goes on training. Writes run one at a time on a background thread, in
the order they were submitted: `submit` first waits for the write in flight, so at most one is
ever running and each write sees every earlier one committed. A write that fails is never lost:
its exception is raised in the loop's thread by the next `submit` or by `wait`, with a note
naming the checkpoint.

Burn's `AsyncCheckpointer` sends saves and deletions to one thread over a rendezvous channel
and stops training through the interrupter when one fails; here a failure is raised to the
caller instead, as the synchronous write would have raised it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["AsyncCheckpointer"]

log = logging.getLogger("burnish.train")


class AsyncCheckpointer:
    """Runs checkpoint writes on a background thread, one at a time.

    The writing thread is not a daemon: an interpreter that exits while a write is in flight
    lets it finish first.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._label: str | None = None
        self._error: BaseException | None = None

    @property
    def in_flight(self) -> str | None:
        """The label of the write running now (a checkpoint's name), None when idle."""
        thread = self._thread
        return self._label if thread is not None and thread.is_alive() else None

    def submit(self, label: str, write: Callable[[], None]) -> None:
        """Start `write` in the background once the write in flight is done.

        Args:
            label: what is written (a checkpoint's name), for messages.
            write: writes and commits it; runs on the writing thread.

        Raises:
            BaseException: the error of the previous write, if it failed (`write` is then
                not started).
        """
        self.wait()
        self._label = label
        self._thread = threading.Thread(
            target=self._run, args=(label, write), name=f"burnish-checkpoint-{label}"
        )
        self._thread.start()

    def wait(self) -> None:
        """Block until the write in flight has committed or failed; raise its error.

        Raises:
            BaseException: the exception the write raised (once: a later call does not raise
                it again).
        """
        error = self.finish()
        if error is not None:
            raise error

    def finish(self) -> BaseException | None:
        """Block until the write in flight has committed or failed; return its error."""
        thread = self._thread
        if thread is not None:
            if thread.is_alive():
                log.debug("Waiting for checkpoint %s to be written.", self._label)
            thread.join()
            self._thread = None
        error, self._error = self._error, None
        return error

    def _run(self, label: str, write: Callable[[], None]) -> None:
        try:
            write()
        except BaseException as error:  # raised in the loop's thread by `wait`/`submit`
            _add_note(error, f"(while writing checkpoint {label} in the background)")
            self._error = error


def _add_note(error: BaseException, note: str) -> None:
    add_note = getattr(error, "add_note", None)  # Python 3.11+
    if add_note is not None:
        add_note(note)

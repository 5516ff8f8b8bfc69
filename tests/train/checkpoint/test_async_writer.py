"""`AsyncCheckpointer`: writes on a background thread, one at a time, errors never lost."""

from __future__ import annotations

import errno
import threading

import pytest

from burnish.train.checkpoint.async_writer import AsyncCheckpointer

GUARD_S = 30.0  # a held write gives up waiting after this long (a failure, never the path)


class WaitedFor(AsyncCheckpointer):
    """Tells, through `waited`, when the caller starts waiting for a write in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.waited = threading.Event()

    def finish(self):
        if self.in_flight is not None:
            self.waited.set()
        return super().finish()


def test_a_write_runs_on_its_own_thread_which_is_not_a_daemon():
    writer, seen = AsyncCheckpointer(), []
    writer.submit("epoch-1", lambda: seen.append(threading.current_thread()))
    writer.wait()
    assert len(seen) == 1 and seen[0] is not threading.current_thread()
    assert seen[0].name == "burnish-checkpoint-epoch-1" and not seen[0].daemon
    assert writer.in_flight is None


def test_the_next_write_starts_only_once_the_one_in_flight_is_done():
    """The first write lasts until the caller waits for it (here: by submitting the next)."""
    writer, events = WaitedFor(), []

    def first():
        events.append("first starts")
        writer.waited.wait(GUARD_S)
        events.append("first ends")

    writer.submit("epoch-1-iteration-2", first)
    assert writer.in_flight == "epoch-1-iteration-2"
    writer.submit("epoch-1-iteration-4", lambda: events.append("second"))
    writer.wait()
    assert events == ["first starts", "first ends", "second"]


def test_a_failed_write_is_raised_by_the_next_submit_which_starts_nothing():
    writer, started = AsyncCheckpointer(), []

    def failing():
        raise OSError(errno.ENOSPC, "No space left on device")

    writer.submit("epoch-3", failing)
    with pytest.raises(OSError, match="No space left on device") as raised:
        writer.submit("epoch-4", lambda: started.append(True))
    assert raised.value.__notes__ == ["(while writing checkpoint epoch-3 in the background)"]
    writer.wait()  # raised once: not again
    assert started == []


def test_a_failed_last_write_is_raised_by_wait_once():
    writer = AsyncCheckpointer()

    def failing():
        raise PermissionError(errno.EACCES, "Permission denied")

    writer.submit("epoch-1", failing)
    with pytest.raises(PermissionError, match="Permission denied"):
        writer.wait()
    writer.wait()
    assert writer.finish() is None


def test_finish_returns_the_error_instead_of_raising_it():
    writer = AsyncCheckpointer()
    writer.submit("epoch-1", lambda: 1 / 0)
    error = writer.finish()
    assert isinstance(error, ZeroDivisionError)
    assert writer.finish() is None


def test_waiting_with_nothing_submitted_returns_at_once():
    writer = AsyncCheckpointer()
    writer.wait()
    assert writer.in_flight is None and writer.finish() is None

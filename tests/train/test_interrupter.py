"""The interrupter: a flag for graceful stops, and Ctrl-C handling with real signals."""

import os
import signal
import threading

import pytest

from burnish.train import Interrupter


def test_stop_and_reset():
    interrupter = Interrupter()
    assert not interrupter.should_stop()
    interrupter.stop("done")
    assert interrupter.should_stop() and interrupter.reason == "done"
    interrupter.reset()
    assert not interrupter.should_stop() and interrupter.reason is None


def test_get_message_is_the_last_reason_given():
    interrupter = Interrupter()
    assert interrupter.get_message() is None
    interrupter.stop("preempted")
    interrupter.stop()  # Burn: a stop without a reason keeps the message
    assert interrupter.get_message() == "preempted"
    interrupter.stop("asked again")
    assert interrupter.get_message() == "asked again"


def test_stop_from_another_thread():
    interrupter = Interrupter()
    thread = threading.Thread(target=interrupter.stop, args=("from a thread",))
    thread.start()
    thread.join()
    assert interrupter.should_stop()


def test_ctrl_c_once_asks_for_a_graceful_stop_twice_aborts():
    interrupter = Interrupter()
    previous = signal.getsignal(signal.SIGINT)
    with interrupter.catch_sigint():
        os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode boundary
        assert interrupter.should_stop()
        assert "Ctrl-C again" in interrupter.reason
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            signal.sigtimedwait([], 0) if hasattr(signal, "sigtimedwait") else None
    assert signal.getsignal(signal.SIGINT) is previous

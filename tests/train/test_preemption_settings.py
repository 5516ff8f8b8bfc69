"""`preemption(...)` on both builders, the signal handlers it installs for `fit` (and restores),
and a second signal ending the process at once; real signals, in process and in a child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import torch

from burnish.optim import SgdConfig
from burnish.record import DefaultRecorder
from burnish.train import (
    Interrupter,
    Learner,
    Preempted,
    SupervisedTraining,
    TrainingListener,
)
from burnish.train.components.preemption import PreemptionWatch, preemption_settings

from tests.train.helpers import Mlp, builder, loaders


@pytest.mark.parametrize(
    ("signals", "exit_code", "match"),
    [
        ([signal.SIGKILL], None, "SIGKILL cannot be caught"),
        (["SIGINT"], None, "Ctrl-C"),
        (["SIGNOPE"], None, "Received: 'SIGNOPE'"),
        ([99999], None, "Received: 99999"),
        (None, 256, "exit_code=256"),
        (None, True, "exit_code=True"),
    ],
)
def test_bad_settings_are_refused_clearly(signals, exit_code, match):
    with pytest.raises(ValueError, match=match):
        builder("unused").preemption(signals=signals, exit_code=exit_code)


def test_signal_names_numbers_and_the_off_switch():
    settings = preemption_settings(["usr1", 15, signal.SIGUSR1], requeue=True, exit_code=0)
    assert settings.signals == (signal.SIGUSR1, signal.SIGTERM)
    assert settings.requeue and settings.exit_code == 0
    assert preemption_settings([], False, None).signals == ()


def test_the_handlers_live_while_the_watch_catches_and_the_previous_come_back():
    interrupter = Interrupter()
    watch = PreemptionWatch(preemption_settings(["SIGUSR1"], False, None), interrupter)
    previous = signal.getsignal(signal.SIGUSR1)
    with watch.catch():
        assert signal.getsignal(signal.SIGUSR1) != previous
        os.kill(os.getpid(), signal.SIGUSR1)
        signal.sigtimedwait([], 0)  # the handler runs at the next bytecode boundary
        assert interrupter.should_stop() and interrupter.reason == "preempted (SIGUSR1)"
        assert watch.signal == signal.SIGUSR1
    assert signal.getsignal(signal.SIGUSR1) == previous


def test_switched_off_the_handlers_are_untouched():
    watch = PreemptionWatch(preemption_settings([], False, None), Interrupter())
    previous = signal.getsignal(signal.SIGTERM)
    with watch.catch():
        assert signal.getsignal(signal.SIGTERM) == previous


class SignalAt(TrainingListener):
    """Sends this process `number` at the `at`-th training iteration."""

    def __init__(self, at: int, number: int) -> None:
        self.at, self.number, self.seen = at, number, 0

    def on_iteration_end(self, event):
        if event.split == "train":
            self.seen += 1
            if self.seen == self.at:
                os.kill(os.getpid(), self.number)


@pytest.mark.parametrize("how", ["learner_builder", "supervised_training"])
def test_fit_raises_preempted_after_a_checkpoint_on_both_builders(tmp_path, how):
    torch.manual_seed(0)
    train, valid = loaders(batch_size=64, train_items=640, valid_items=64)
    model, optim = Mlp(), SgdConfig().init()
    if how == "learner_builder":
        configured = builder(tmp_path, epochs=2, recorder=DefaultRecorder())
    else:
        configured = (
            SupervisedTraining(tmp_path, train, valid)
            .num_epochs(2)
            .with_file_checkpointer(DefaultRecorder())
        )
    configured = configured.preemption(signals=["SIGUSR1"], exit_code=7)
    configured = configured.with_listener(SignalAt(4, signal.SIGUSR1))
    previous = signal.getsignal(signal.SIGUSR1)
    with pytest.raises(Preempted) as raised:
        if how == "learner_builder":
            configured.build(model, optim, 0.1).fit(train, valid)
        else:
            configured.launch(Learner(model, optim, 0.1))
    preempted = raised.value
    assert preempted.code == 7 and preempted.signal == signal.SIGUSR1
    assert preempted.result is not None and preempted.result.interrupted
    assert preempted.checkpoint == tmp_path / "checkpoint" / "epoch-1-iteration-4"
    assert preempted.checkpoint.is_dir() and not preempted.requeued
    assert signal.getsignal(signal.SIGUSR1) == previous  # restored when `fit` ended
    assert (
        "Preempted by SIGUSR1: stopped at epoch 1, iteration 4"
        in (tmp_path / "experiment.log").read_text()
    )


def test_a_second_signal_ends_the_process_at_once():
    script = textwrap.dedent(
        """
        import os, signal
        from burnish.train import Interrupter
        from burnish.train.components.preemption import PreemptionWatch, preemption_settings
        watch = PreemptionWatch(preemption_settings(None, False, None), Interrupter())
        with watch.catch():
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)
            print("first caught", watch.interrupter.should_stop(), flush=True)
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)
            print("still running", flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.stdout == "first caught True\n"
    assert done.returncode == -signal.SIGTERM

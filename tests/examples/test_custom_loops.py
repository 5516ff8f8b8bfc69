"""The custom-loop examples run end to end on a slice of the real MNIST (short settings)."""

from __future__ import annotations

import re

import pytest

from examples import custom_training_loop, multiple_optimizers
from tests.examples.interrupt import start_and_interrupt

# One intra-op thread: two per test worker oversubscribe the cores (fp16's emulated kernels
# took 10.6 s of CPU with two, 7.1 s with one; the same numbers).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_custom_training_loop_prints_burn_lines_and_learns(capsys):
    accuracy = custom_training_loop.main(
        ["--epochs", "2", "--limit", "384", "--workers", "0", "--print-every", "4"]
    )
    out = capsys.readouterr().out
    train = re.findall(r"\[Train - Epoch (\d) - Iteration (\d+)\] Loss ([\d.]+) \| Accuracy", out)
    valid = re.findall(r"\[Valid - Epoch (\d) - Iteration (\d+)\] Loss", out)
    assert len(train) == 2 * 6 and len(valid) == 2 * 6  # 384 items / 64 per batch, 2 epochs
    assert [int(i) for e, i, _ in train if e == "2"] == list(range(6))
    first, last = float(train[0][2]), float(train[-1][2])
    assert last < first  # it learns
    assert "[Valid - Epoch 2] Test accuracy" in out and 0.0 <= accuracy <= 100.0


def test_custom_training_loop_under_fp16_with_loss_scaling_learns(capsys):
    short = ["--epochs", "2", "--limit", "384", "--workers", "0", "--print-every", "4"]
    accuracy = custom_training_loop.main([*short, "--precision", "fp16"])
    out = capsys.readouterr().out
    losses = re.findall(r"\[Train - Epoch \d - Iteration \d+\] Loss ([\d.]+) \|", out)
    assert len(losses) == 2 * 6
    assert float(losses[-1]) < float(losses[0])  # it learns
    assert accuracy > 30.0  # well above chance (10 %)


def test_multiple_optimizers_example(capsys):
    accuracy = multiple_optimizers.main(["--limit", "640", "--two-optimizers"])
    out = capsys.readouterr().out
    assert re.search(r"\[Epoch 1\] train loss [\d.]+ \| test accuracy [\d.]+ %", out)
    assert "optimizer state: ['conv1.bias', 'conv1.weight', 'conv2.bias'" in out
    assert "second optimizer state: ['linear2.bias', 'linear2.weight']" in out
    assert accuracy > 30.0  # well above chance (10 %) after 10 iterations


def test_ctrl_c_in_the_hand_written_loop_says_so_in_one_line_and_exits_130():
    args = ["-m", "examples.custom_training_loop", "--epochs", "1", "--limit", "2000"]
    args += ["--workers", "0", "--print-every", "1"]
    code, out, err = start_and_interrupt(args, "[Train", forked=False)
    assert code == 130, out + err
    assert err == "Interrupted (Ctrl-C): this loop keeps no checkpoint; nothing was saved.\n"
    assert "Test accuracy" not in out

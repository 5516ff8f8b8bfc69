"""A run over torchdata `StatefulDataLoader`s stopped inside a validation (after an epoch, and
inside one with `valid_every`), in-process, then resumed: the checkpoint is the validation's,
which is redone in full from the valid loader's epoch-start state, while the train loader goes
on from its own state; the final parameters equal an uninterrupted run's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from burnish.train import TrainingListener

from tests.train.stateful_run import BATCH, EPOCHS, TRAIN_ITEMS, VALID_ITEMS, fit

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


class StopInValidation(TrainingListener):
    """Asks the run to stop at the `at`-th validation batch it sees."""

    def __init__(self, at: int) -> None:
        self.at, self.seen = at, 0

    def on_iteration_end(self, event) -> None:
        if event.split == "valid":
            self.seen += 1
            if self.seen == self.at:
                event.stop("a stop inside validation (test)")


def run(directory: Path, valid_every: int = 0, stop_at: int | None = None):
    """`fit` in `directory`; the result, the final parameters and the items drawn by split."""
    draws_path = directory / f"draws-{len(list(directory.glob('draws-*')))}.txt"
    draws = os.open(draws_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    listener = StopInValidation(stop_at) if stop_at else None
    try:
        result = fit(directory / "artifacts", draws, valid_every=valid_every, listener=listener)
    finally:
        os.close(draws)
    drawn: dict[str, list[int]] = {"train": [], "valid": []}
    for line in draws_path.read_text().splitlines():
        split, index = line.split()
        drawn[split].append(int(index))
    return result, dict(result.model.state_dict()), drawn


def resume_line(directory: Path) -> str:
    lines = (directory / "artifacts" / "experiment.log").read_text().splitlines()
    return [line for line in lines if "Resumed from checkpoint" in line][-1]


def assert_same(expected: dict[str, torch.Tensor], actual: dict[str, torch.Tensor]) -> None:
    assert expected.keys() == actual.keys()
    for key, tensor in expected.items():
        assert torch.equal(tensor, actual[key]), key


def test_a_stop_in_the_epochs_validation_redoes_it_and_draws_no_training_item_again(tmp_path):
    (tmp_path / "straight").mkdir(), (tmp_path / "stopped").mkdir()
    _, expected, straight = run(tmp_path / "straight")
    stopped, _, before = run(tmp_path / "stopped", stop_at=2)  # epoch 1's validation
    assert stopped.interrupted
    assert before["train"] == straight["train"][:TRAIN_ITEMS]
    assert before["valid"] == straight["valid"][: 2 * BATCH]
    result, parameters, drawn = run(tmp_path / "stopped")
    assert "epoch 1's validation runs next" in resume_line(tmp_path / "stopped")
    assert drawn["train"] == straight["train"][TRAIN_ITEMS:]
    assert drawn["valid"] == straight["valid"]  # the cut validation again, from its start
    assert result.epochs_completed == EPOCHS
    assert_same(expected, parameters)


def test_a_stop_in_a_validation_inside_the_epoch_redoes_it_then_trains_on(tmp_path):
    (tmp_path / "straight").mkdir(), (tmp_path / "stopped").mkdir()
    _, expected, straight = run(tmp_path / "straight", valid_every=7)
    stopped, _, before = run(tmp_path / "stopped", valid_every=7, stop_at=2)  # at iteration 7
    assert stopped.interrupted
    assert before["train"] == straight["train"][: 7 * BATCH]
    _, parameters, drawn = run(tmp_path / "stopped", valid_every=7)
    line = resume_line(tmp_path / "stopped")
    assert "the validation after iteration 7 of epoch 1, cut short, runs again" in line
    assert drawn["train"] == straight["train"][7 * BATCH :]
    assert drawn["valid"] == straight["valid"]
    assert len(drawn["valid"]) > EPOCHS * VALID_ITEMS  # validations inside the epochs too
    assert_same(expected, parameters)

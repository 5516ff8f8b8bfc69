"""SIGKILL runs trained on torchdata `StatefulDataLoader`s (tests/train/stateful_run.py) and
resume them: the final parameters equal an uninterrupted run's bit for bit, and the resumed
process draws from the datasets only the items at and after the checkpoint's position, with
0 and 2 workers. A plain `torch.utils.data.DataLoader` is resumed too, to show what it draws
again."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest
import torch

from tests import fork_server
from tests.train.stateful_run import BATCH, EPOCHS, TRAIN_ITEMS, VALID_ITEMS
from tests.train.test_crash_resume import communicate

SCRIPT = Path(__file__).with_name("stateful_run.py")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
RESUMED = re.compile(r"Resumed from checkpoint \S+, iteration (\d+): (.*)")


def run(directory: Path, *flags: str) -> tuple[int, dict[str, list[int]]]:
    """Run the script in `directory` once; its exit code and the items it drew, per split
    (in the order they were drawn)."""
    draws = directory / f"draws-{len(list(directory.glob('draws-*')))}.txt"
    command = [str(SCRIPT), str(directory / "artifacts"), str(directory / "final.pt"), str(draws)]
    process = fork_server.popen(
        [*command, *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    _, stderr = communicate(process)
    if process.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"stateful_run.py failed ({process.returncode}):\n{stderr[-3000:]}")
    drawn: dict[str, list[int]] = {"train": [], "valid": []}
    for line in draws.read_text().splitlines():
        split, index = line.split()
        drawn[split].append(int(index))
    return process.returncode, drawn


def resume_point(directory: Path) -> tuple[int, str]:
    """The global iteration the last resume continued from, and where it said it went on."""
    found = RESUMED.findall((directory / "artifacts" / "experiment.log").read_text())
    assert found, "the run did not resume"
    step, where = found[-1]
    return int(step), where


def parameters(directory: Path) -> dict[str, torch.Tensor]:
    return torch.load(directory / "final.pt")


def assert_same_parameters(expected: Path, actual: Path) -> None:
    reference, resumed = parameters(expected), parameters(actual)
    assert reference.keys() == resumed.keys()
    for key, tensor in reference.items():
        assert torch.equal(tensor, resumed[key]), key


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """`straight(workers)`: one uninterrupted run with that many workers (run once) and the
    items it drew. torchdata shuffles otherwise with workers than without: each count has
    its own."""
    runs: dict[int, tuple[Path, dict[str, list[int]]]] = {}

    def straight_run(workers: int) -> tuple[Path, dict[str, list[int]]]:
        if workers not in runs:
            directory = tmp_path_factory.mktemp(f"straight-{workers}")
            code, drawn = run(directory, "--workers", str(workers))
            assert code == 0
            assert len(drawn["train"]) == EPOCHS * TRAIN_ITEMS
            assert len(drawn["valid"]) == EPOCHS * VALID_ITEMS
            runs[workers] = directory, drawn
        return runs[workers]

    return straight_run


@pytest.mark.parametrize("workers", [0, 2])
def test_sigkill_mid_epoch_then_resume_is_bit_identical_and_redraws_nothing(
    straight, tmp_path, workers
):
    reference, expected = straight(workers)
    flags = ("--workers", str(workers))
    killed, before = run(tmp_path, *flags, "--kill-at-step", "41")  # epoch 2, iteration 11
    assert killed == -signal.SIGKILL
    code, drawn = run(tmp_path, *flags)
    assert code == 0
    step, where = resume_point(tmp_path)
    epoch = (step * BATCH) // TRAIN_ITEMS + 1
    assert 30 < step < 41 and where.startswith(f"training continues in epoch {epoch} after")
    # Only the items from the checkpoint on.
    assert len(drawn["train"]) == EPOCHS * TRAIN_ITEMS - step * BATCH
    assert len(drawn["valid"]) == (EPOCHS - epoch + 1) * VALID_ITEMS
    if workers == 0:  # the straight run's, in its order
        assert drawn["train"] == expected["train"][step * BATCH :]
    else:  # each worker logs its own draws: the resumed epoch's items, each once, are those
        # the killed run had not trained on (it drew them, and prefetched some more)
        left = (epoch * TRAIN_ITEMS) - step * BATCH
        resumed, killed_epoch = drawn["train"][:left], before["train"][TRAIN_ITEMS:]
        assert len(set(resumed)) == left
        assert set(resumed) | set(killed_epoch) == set(range(TRAIN_ITEMS))
    assert_same_parameters(reference, tmp_path)


def test_sigkill_in_validation_then_resume_is_bit_identical(straight, tmp_path):
    reference, expected = straight(0)
    killed, before = run(tmp_path, "--kill-in-valid")  # in epoch 1's validation
    assert killed == -signal.SIGKILL
    code, drawn = run(tmp_path)
    assert code == 0
    step, _ = resume_point(tmp_path)  # the last checkpoint before the validation
    assert before["train"] == expected["train"][:TRAIN_ITEMS]
    assert drawn["train"] == expected["train"][step * BATCH :]
    assert drawn["valid"] == expected["valid"]  # the cut validation is done in full
    assert_same_parameters(reference, tmp_path)


def test_sigkill_in_a_validation_inside_the_epoch_then_resume_is_bit_identical(tmp_path):
    straight_dir, resumed_dir = tmp_path / "straight", tmp_path / "resumed"
    straight_dir.mkdir(), resumed_dir.mkdir()
    assert run(straight_dir, "--valid-every", "7")[0] == 0
    killed, _ = run(resumed_dir, "--valid-every", "7", "--kill-in-valid")  # at iteration 7
    assert killed == -signal.SIGKILL
    code, drawn = run(resumed_dir, "--valid-every", "7")
    assert code == 0
    step, where = resume_point(resumed_dir)
    assert step < 7 and where.startswith("training continues in epoch 1 after")
    assert len(drawn["train"]) == EPOCHS * TRAIN_ITEMS - step * BATCH
    assert_same_parameters(straight_dir, resumed_dir)


def test_a_plain_torch_dataloader_draws_the_skipped_batches_again(tmp_path):
    killed, _ = run(tmp_path, "--plain", "--kill-at-step", "41")
    assert killed == -signal.SIGKILL
    code, drawn = run(tmp_path, "--plain")
    assert code == 0
    step, _ = resume_point(tmp_path)
    epoch = (step * BATCH) // TRAIN_ITEMS + 1
    # The resumed epoch is drawn whole: its first batches again, then dropped.
    assert len(drawn["train"]) == (EPOCHS - epoch + 1) * TRAIN_ITEMS
    assert len(drawn["train"]) > EPOCHS * TRAIN_ITEMS - step * BATCH

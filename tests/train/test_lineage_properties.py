"""Property: any sequence of fit / SIGKILL at a random step / resume / branch with
`checkpoint(N)` and another learning rate (killed at a random step, or inside the branch's
start) / resume ends where the straight run that the final line describes ends: parameters
bit-identical, metric logs and aggregates equal, the same checkpoints. Real processes
(tests/train/lineage_run.py, forked by tests/fork_server.py), killed with SIGKILL."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.train.logger.test_trackers import read_csv, read_tensorboard
from tests.train.test_crash_resume import communicate, start
from tests.train.test_lineage import files

SCRIPT = Path(__file__).with_name("lineage_run.py")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
TRACKERS = ("--trackers", "csv,tensorboard")  # MLflow and W&B: test_tracker_lineage.py


def launch(directory: Path, out: Path, epochs: int, start_from: str, *flags: str) -> int:
    """One start of the run; its exit code (0, or -SIGKILL when it killed itself)."""
    command = [str(SCRIPT), str(directory), str(out), "--epochs", str(epochs), *TRACKERS]
    process = start([*command, "--start", start_from, *flags])
    _, stderr = communicate(process)
    if process.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"lineage_run.py failed ({process.returncode}):\n{stderr[-3000:]}")
    return process.returncode


def until_done(directory: Path, out: Path, epochs: int, lr: str) -> None:
    """`resume()` until the run completes (a run killed before it ends is resumed)."""
    for _ in range(3):
        if launch(directory, out, epochs, "resume", "--lr", lr) == 0:
            return
    raise AssertionError("resume() did not complete")


@st.composite
def sequences(draw):
    first = draw(st.integers(2, 3))  # epochs of the first line (4 steps each)
    branch_at = draw(st.integers(1, first - 1))
    epochs = draw(st.integers(branch_at + 1, branch_at + 2))
    return {
        "first": first,
        "kill_first": draw(st.integers(0, 4 * first)),  # 0: not killed
        "branch_at": branch_at,
        "epochs": epochs,
        "kill_in_branch": draw(st.integers(0, 7)),  # the K-th commit of the branch's start
        "kill_branch_step": draw(st.integers(0, 4 * (epochs - branch_at))),
    }


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(sequence=sequences())
def test_a_branched_killed_resumed_run_ends_as_the_straight_run_of_its_line(
    tmp_path_factory, sequence
):
    root = tmp_path_factory.mktemp("lineage")
    run, out = root / "run", root / "run.pt"
    kill = ["--kill-at-step", str(sequence["kill_first"])] if sequence["kill_first"] else []
    launch(run, out, sequence["first"], "resume", *kill)
    until_done(run, out, sequence["first"], "1e-3")

    n, epochs = sequence["branch_at"], sequence["epochs"]
    in_start, in_training = sequence["kill_in_branch"], sequence["kill_branch_step"]
    attempts = [
        *([["--kill-in-branch", str(in_start)]] if in_start else []),
        *([["--kill-at-step", str(in_training)]] if in_training else []),
        [],
    ]
    for flags in attempts:  # the user starts the branch again after a kill in its start
        code = launch(run, out, epochs, str(n), "--lr", "3e-3", *flags)
        if code == 0 or (run / "branches" / "lineage.json").is_file():
            break
    until_done(run, out, epochs, "3e-3")

    straight, straight_out = root / "straight", root / "straight.pt"
    assert launch(straight, straight_out, n, "resume") == 0
    until_done(straight, straight_out, epochs, "3e-3")

    expected, actual = torch.load(straight_out), torch.load(out)
    assert expected.keys() == actual.keys()
    for name, tensor in expected.items():
        assert torch.equal(tensor, actual[name]), name
    assert files(run, "train", "valid") == files(straight, "train", "valid")
    # The trackers hold the final line's history, each point once.
    assert read_csv(run / "metrics.csv") == read_csv(straight / "metrics.csv")
    _, scalars = read_tensorboard(run / "tensorboard")
    assert scalars == read_tensorboard(straight / "tensorboard")[1]
    names = sorted(p.name for p in (run / "checkpoint").iterdir())
    assert names == sorted(p.name for p in (straight / "checkpoint").iterdir())
    lines = sorted(p.name for p in (run / "branches").iterdir() if p.name[0].isdigit())
    assert lines == [f"1-from-epoch-{n}"]  # one branch, however often it was started
    assert (run / "branches" / lines[0] / "train" / f"epoch-{sequence['first']}").is_dir()

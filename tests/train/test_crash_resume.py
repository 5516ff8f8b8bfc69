"""Kill training with SIGKILL at many moments — inside checkpoint writes (on the background
writer's thread too, while the loop runs ahead), mid-epoch, during validation, with data-loader
workers — resume each time, and require the final parameters, optimizer state and every metric
log to equal an uninterrupted run's, bit for bit."""

from __future__ import annotations

import contextlib
import csv
import os
import random
import signal
import subprocess
import threading
from pathlib import Path

import pytest
import torch

from tests import fork_server

SCRIPT = Path(__file__).with_name("crash_run.py")
# Each run is a process of its own, forked from an interpreter that imported torch once
# (tests/fork_server.py): generous limits for a loaded machine.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]


def start(command: list[str]) -> subprocess.Popen:
    """The script in a session of its own (forked), its output on pipes."""
    return fork_server.popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )


def communicate(process: subprocess.Popen) -> tuple[str, str]:
    """`process.communicate()`; once the process has exited, what it left running in its
    group is SIGKILLed. A killed run's DataLoader workers (`--workers 2`) notice their parent
    is gone only at their next status check, 5 s later (PyTorch's MP_STATUS_CHECK_INTERVAL),
    and hold the output pipes open until then: a job scheduler would kill them with it."""

    def reap() -> None:
        process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)

    reaper = threading.Thread(target=reap, daemon=True)
    reaper.start()
    stdout, stderr = process.communicate(timeout=120)
    reaper.join()
    return stdout, stderr


def run(artifact_dir: Path, out: Path, *flags: str, kill_after: float | None = None) -> int:
    """Run the script; with `kill_after`, SIGKILL it that many seconds after training began."""
    process = start([str(SCRIPT), str(artifact_dir), str(out), *flags])
    head = ""
    if kill_after is not None:
        for line in process.stderr:  # the renderer's first line: training has begun
            head += line
            if line.startswith("Training for"):
                break
        try:
            process.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGKILL)
    stdout, stderr = communicate(process)
    stderr = head + stderr
    if process.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"crash_run.py failed ({process.returncode}):\n{stderr[-3000:]}")
    run.last_stdout = stdout
    return process.returncode


def logs(artifact_dir: Path) -> dict[str, bytes]:
    """Every metric log and every epoch's aggregates (the epoch values) of both splits."""
    found = {
        str(path.relative_to(artifact_dir)): path.read_bytes()
        for split in ("train", "valid")
        for pattern in ("*.log", "aggregates.json")
        for path in sorted((artifact_dir / split).rglob(pattern))
    }
    epochs = {str(Path(name).parent) for name in found if name.endswith(".log")}
    aggregates = {str(Path(name).parent) for name in found if name.endswith("aggregates.json")}
    assert aggregates == epochs  # every finished epoch of each split has its epoch values
    return found


def assert_same_run(reference_dir: Path, reference: Path, resumed_dir: Path, resumed: Path):
    expected, actual = torch.load(reference), torch.load(resumed)
    for key, tensor in expected["model"].items():
        assert torch.equal(tensor, actual["model"][key]), key
    _assert_equal_records(expected["optim"], actual["optim"], "optim")
    assert logs(resumed_dir) == logs(reference_dir)
    leftovers = [p.name for p in (resumed_dir / "checkpoint").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def _assert_equal_records(expected, actual, path):
    if isinstance(expected, torch.Tensor):
        assert torch.equal(expected, actual), path
    elif isinstance(expected, dict):
        assert expected.keys() == actual.keys(), path
        for key in expected:
            _assert_equal_records(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, (list, tuple)):
        assert len(expected) == len(actual), path
        for i, (e, a) in enumerate(zip(expected, actual)):
            _assert_equal_records(e, a, f"{path}[{i}]")
    else:
        assert expected == actual, path


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run, how many file-system commit calls it makes, and how many of
    them the background checkpoint writer makes."""
    directory = tmp_path_factory.mktemp("reference")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    writer_calls = int(run.last_stdout.split("background-writes")[-1].split()[0])
    return directory / "artifacts", out, io_calls, writer_calls


def resume_until_done(artifact_dir: Path, out: Path, kills: list[list[str] | float], *flags):
    """Apply each kill (flags for a self-kill, or seconds for a timed SIGKILL), then finish."""
    killed = 0
    for kill in kills:
        if isinstance(kill, float):
            code = run(artifact_dir, out, *flags, "--step-delay", "0.01", kill_after=kill)
        else:
            code = run(artifact_dir, out, *flags, *kill)
        killed += code == -signal.SIGKILL
        if code == 0:
            break
    if not out.exists():
        assert run(artifact_dir, out, *flags) == 0
    return killed


def test_sigkill_anywhere_then_resume_is_bit_identical(reference, tmp_path):
    reference_dir, reference_out, io_calls, _ = reference
    rng = random.Random(20261122)
    # Self-kills at the n-th fsync/rename/write land inside checkpoint and log commits;
    # a resumed process has less left to do, so n is drawn from the first part of a run.
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 20))] for _ in range(16)]
    for position in (1, 3, 5, 7, 9, 11):  # timed kills from outside, while much work is left
        kills.insert(position, rng.uniform(0.02, 0.15))  # seconds into ~1.3 s of training
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills)
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")
    assert killed >= 20, f"only {killed} of {len(kills)} kills landed before the run finished"


def test_sigkill_in_the_background_writer_then_resume_is_bit_identical(reference, tmp_path):
    """Kills from inside the checkpoint writer's thread. With `--hold-writes` each write is
    held until the loop reaches its next save, so the kill lands while the loop has trained
    and logged past the checkpoint being written; without, wherever the two threads are."""
    reference_dir, reference_out, _, writer_calls = reference
    assert writer_calls > 0  # the reference run wrote its checkpoints in the background
    rng = random.Random(20260403)
    kills = [
        [
            *(["--hold-writes"] if i % 2 == 0 else []),
            "--kill-in-writer",
            str(rng.randint(1, writer_calls // 8)),
        ]
        for i in range(8)
    ]
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills)
    assert killed >= 6, f"only {killed} of {len(kills)} kills landed before the run finished"
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")


def test_kill_during_validation_then_resume_is_bit_identical(reference, tmp_path):
    reference_dir, reference_out, *_ = reference
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", [["--kill-in-valid"]])
    assert killed == 1
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")


def test_kill_with_two_workers_then_resume_is_bit_identical(reference, tmp_path):
    reference_dir, reference_out, io_calls, _ = reference
    rng = random.Random(7)
    kills = [["--kill-at-io", str(rng.randint(1, io_calls // 20))] for _ in range(3)]
    killed = resume_until_done(
        tmp_path / "artifacts", tmp_path / "final.pt", kills, "--workers", "2"
    )
    assert killed >= 2
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")


@pytest.fixture(scope="module")
def reference_fp16(tmp_path_factory):
    """One uninterrupted run under float16 mixed precision (loss scaling)."""
    directory = tmp_path_factory.mktemp("reference-fp16")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io", "--precision", "fp16") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    return directory / "artifacts", out, io_calls


def test_sigkill_then_resume_under_fp16_is_bit_identical(reference_fp16, tmp_path):
    reference_dir, reference_out, io_calls = reference_fp16
    rng = random.Random(16)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 20))] for _ in range(5)]
    kills.insert(2, rng.uniform(0.02, 0.15))
    killed = resume_until_done(
        tmp_path / "artifacts", tmp_path / "final.pt", kills, "--precision", "fp16"
    )
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")
    assert killed >= 4, f"only {killed} of {len(kills)} kills landed before the run finished"


@pytest.fixture(scope="module")
def reference_groups(tmp_path_factory):
    """One uninterrupted run with parameter groups (ModuleOptimizer, ModuleLrScheduler)."""
    directory = tmp_path_factory.mktemp("reference-groups")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io", "--groups") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    return directory / "artifacts", out, io_calls


def test_sigkill_then_resume_with_parameter_groups_is_bit_identical(reference_groups, tmp_path):
    """Each group's optimizer state, each group's schedule and a rate per group kept inside
    a group of accumulated iterations all come back from the checkpoint."""
    reference_dir, reference_out, io_calls = reference_groups
    rng = random.Random(24)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 20))] for _ in range(5)]
    kills.insert(2, rng.uniform(0.02, 0.15))
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills, "--groups")
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")
    assert set(torch.load(reference_out)["optim"]["group_of"].values()) == {0, 1}
    assert killed >= 4, f"only {killed} of {len(kills)} kills landed before the run finished"


@pytest.fixture(scope="module")
def reference_ema(tmp_path_factory):
    """One uninterrupted run keeping an average of the weights."""
    directory = tmp_path_factory.mktemp("reference-ema")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io", "--ema") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    return directory / "artifacts", out, io_calls


def test_sigkill_then_resume_continues_the_ema_bit_identically(reference_ema, tmp_path):
    reference_dir, reference_out, io_calls = reference_ema
    rng = random.Random(12)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 20))] for _ in range(5)]
    kills.insert(2, rng.uniform(0.02, 0.15))
    killed = resume_until_done(tmp_path / "artifacts", tmp_path / "final.pt", kills, "--ema")
    assert any(key.startswith("ema.") for key in torch.load(reference_out)["model"])
    assert_same_run(reference_dir, reference_out, tmp_path / "artifacts", tmp_path / "final.pt")
    assert killed >= 4, f"only {killed} of {len(kills)} kills landed before the run finished"


def start_and_wait_for_training(artifact_dir: Path, out: Path, *flags: str) -> subprocess.Popen:
    """Start the script and return once its renderer says training has begun."""
    process = start([str(SCRIPT), str(artifact_dir), str(out), *flags])
    for line in process.stderr:
        if line.startswith("Training for"):
            return process
    raise AssertionError(f"the run ended before training: {process.wait()}")


def test_ctrl_c_once_stops_after_the_iteration_with_a_checkpoint(reference, tmp_path):
    reference_dir, reference_out, *_ = reference
    artifact_dir, out = tmp_path / "artifacts", tmp_path / "final.pt"
    process = start_and_wait_for_training(artifact_dir, out, "--step-delay", "0.02")
    process.send_signal(signal.SIGINT)
    stdout, _ = communicate(process)
    assert process.returncode == 0
    assert "interrupted=True" in stdout
    assert not out.exists()
    committed = [p.name for p in (artifact_dir / "checkpoint").iterdir()]
    assert any("iteration" in name for name in committed), committed
    assert run(artifact_dir, out) == 0  # resume() continues from that checkpoint
    assert_same_run(reference_dir, reference_out, artifact_dir, out)


@pytest.fixture(scope="module")
def reference_trackers(tmp_path_factory):
    """One uninterrupted run that also logs to CSV and TensorBoard."""
    directory = tmp_path_factory.mktemp("reference-trackers")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io", "--trackers") == 0
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    return directory / "artifacts", out, io_calls


def csv_table(artifact_dir: Path) -> list[tuple[str, ...]]:
    """The rows of the CSV table, in order; a point seen twice fails the test."""
    with open(artifact_dir / "metrics.csv", newline="") as file:
        rows = [tuple(row.values()) for row in csv.DictReader(file)]
    keys = [row[:4] for row in rows]  # (epoch, iteration, split, metric)
    assert len(set(keys)) == len(keys), "duplicated point"
    return rows


def tensorboard_scalars(artifact_dir: Path) -> dict[str, list[tuple[int, float]]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(artifact_dir / "tensorboard"), size_guidance={"scalars": 0})
    events.Reload()
    return {
        tag: sorted((event.step, event.value) for event in events.Scalars(tag))
        for tag in events.Tags()["scalars"]
    }


def test_sigkill_then_resume_writes_the_trackers_of_an_uninterrupted_run(
    reference_trackers, tmp_path
):
    """A twice-killed run writes the same CSV table and TensorBoard scalars as one that was not
    (the points: every epoch, and every 3rd step at a fixed cadence, whatever the pace)."""
    reference_dir, reference_out, io_calls = reference_trackers
    rng = random.Random(14)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 10))] for _ in range(4)]
    kills.insert(2, rng.uniform(0.05, 0.3))
    artifacts = tmp_path / "artifacts"
    killed = resume_until_done(artifacts, tmp_path / "final.pt", kills, "--trackers")
    assert killed >= 3, f"only {killed} of {len(kills)} kills landed before the run finished"
    assert_same_run(reference_dir, reference_out, artifacts, tmp_path / "final.pt")

    expected = csv_table(reference_dir)
    epochs = [row for row in expected if row[1] == ""]
    assert len(epochs) == 4 * 5  # 4 epochs: train Accuracy, Loss, lr; valid Accuracy, Loss
    train_points = [row for row in expected if row[1] and row[2] == "train" and row[3] == "Loss"]
    assert len(train_points) == 4 * 30 // 3  # every 3rd of 30 steps per epoch
    assert csv_table(artifacts) == expected
    assert tensorboard_scalars(artifacts) == tensorboard_scalars(reference_dir)


def test_two_uninterrupted_runs_write_the_same_trackers(reference_trackers, tmp_path):
    """The renderer's pace (25% steps, on a clock) differs between runs; the tables do not."""
    reference_dir, _, _ = reference_trackers
    artifacts = tmp_path / "artifacts"
    assert run(artifacts, tmp_path / "final.pt", "--trackers", "--step-delay", "0.003") == 0
    assert csv_table(artifacts) == csv_table(reference_dir)
    assert tensorboard_scalars(artifacts) == tensorboard_scalars(reference_dir)


# -- early stopping and metric-based checkpointing (issue 32) --------------------------------
# The scripted run's validation metric is 5, 4, 3, 9, 9, ... so the best epoch is 3 and early
# stopping (no improvement since 2 epochs) ends the run after epoch 5 of 8.

# Every epoch boundary before the stop, killed at one of two moments (the two strategies take
# turns): after the epoch's end, or between its checkpoint's commit and the deletions it decided.
IN_END, AFTER = "--kill-in-epoch-end", "--kill-after-epoch"
SCRIPTED_KILLS = {
    "composed": [(IN_END, 1), (AFTER, 2), (IN_END, 3), (AFTER, 4)],
    "metric": [(AFTER, 1), (IN_END, 2), (AFTER, 3), (IN_END, 4)],
}


@pytest.fixture(scope="module")
def scripted_reference(tmp_path_factory):
    """`scripted_reference(strategy)`: one uninterrupted scripted run with that strategy."""
    made = {}

    def make(strategy: str):
        if strategy not in made:
            directory = tmp_path_factory.mktemp(f"reference-{strategy}")
            out, flags = directory / "final.pt", ("--scripted", strategy)
            assert run(directory / "artifacts", out, "--count-io", *flags) == 0
            assert "epochs=5 stopped_early=True" in run.last_stdout
            io_calls = int(run.last_stdout.split("io-calls")[-1])
            made[strategy] = directory / "artifacts", out, io_calls, flags
        return made[strategy]

    return make


def checkpoint_files(artifact_dir: Path) -> dict[str, bytes]:
    """Each checkpoint's COMMIT (the sha256 of every file it holds), by directory name."""
    return {p.name: (p / "COMMIT").read_bytes() for p in (artifact_dir / "checkpoint").iterdir()}


def assert_same_scripted_run(reference_dir, reference_out, artifacts, out):
    assert_same_run(reference_dir, reference_out, artifacts, out)
    assert "epochs=5 stopped_early=True" in run.last_stdout
    assert sorted(checkpoint_files(artifacts)) == sorted(checkpoint_files(reference_dir))


@pytest.mark.parametrize("strategy", ["composed", "metric"])
def test_sigkill_at_every_epoch_boundary_then_resume_stops_at_the_same_epoch(
    scripted_reference, strategy, tmp_path
):
    reference_dir, reference_out, _, flags = scripted_reference(strategy)
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    kills = [[flag, str(epoch)] for flag, epoch in SCRIPTED_KILLS[strategy]]
    assert resume_until_done(artifacts, out, kills, *flags) == len(kills)
    assert_same_scripted_run(reference_dir, reference_out, artifacts, out)

    # The run has ended: resume() trains nothing, deletes nothing and returns the same result.
    before, logged = checkpoint_files(artifacts), logs(artifacts)
    out.unlink()
    assert run(artifacts, out, *flags) == 0
    assert_same_scripted_run(reference_dir, reference_out, artifacts, out)
    assert checkpoint_files(artifacts) == before and logs(artifacts) == logged


def test_sigkill_at_random_moments_with_early_stopping_then_resume_is_bit_identical(
    scripted_reference, tmp_path
):
    reference_dir, reference_out, io_calls, flags = scripted_reference("metric")
    rng = random.Random(32)
    kills: list = [["--kill-at-io", str(rng.randint(1, io_calls // 3))] for _ in range(4)]
    kills.insert(2, rng.uniform(0.05, 0.3))  # seconds into ~1 s of training
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    killed = resume_until_done(artifacts, out, kills, *flags)
    assert killed >= 4, f"only {killed} of {len(kills)} kills landed before the run finished"
    assert_same_scripted_run(reference_dir, reference_out, artifacts, out)


# -- step budgets and validations inside epochs (issue 21) ----------------------------------
# 30 iterations an epoch; a budget of 70 steps ends the run 10 iterations into epoch 3; a
# validation every 8 steps: 8, 16, 24, 30 (epoch end), 32, ..., 64, 70 (the budget's end).
LONG = ("--max-iterations", "70", "--valid-every", "8")


@pytest.fixture(scope="module")
def reference_long(tmp_path_factory):
    """One uninterrupted run with a step budget and validations inside its epochs."""
    directory = tmp_path_factory.mktemp("reference-long")
    out = directory / "final.pt"
    assert run(directory / "artifacts", out, "--count-io", *LONG) == 0
    assert "epochs=3 stopped_early=False iterations=70 validations=11" in run.last_stdout
    io_calls = int(run.last_stdout.split("io-calls")[-1])
    return directory / "artifacts", out, io_calls


def assert_same_long_run(reference_dir, reference_out, artifacts, out):
    assert_same_run(reference_dir, reference_out, artifacts, out)
    validations = Path("valid") / "validations.json"
    assert (artifacts / validations).read_bytes() == (reference_dir / validations).read_bytes()
    assert sorted(checkpoint_files(artifacts)) == sorted(checkpoint_files(reference_dir))


def test_sigkill_between_validations_and_in_one_then_resume_is_bit_identical(
    reference_long, tmp_path
):
    """Killed between two validations (after iterations 13 and 45 of a process), in the first
    validation inside an epoch, inside checkpoint writes and at a random moment: the resumed
    run stops at exactly 70 steps with the parameters, logs, validations and checkpoints of
    the uninterrupted one."""
    reference_dir, reference_out, io_calls = reference_long
    rng = random.Random(21)
    kills: list = [["--kill-at-step", "13"], ["--kill-in-valid"], ["--kill-at-step", "45"]]
    kills += [["--kill-at-io", str(rng.randint(1, io_calls // 10))] for _ in range(3)]
    kills.insert(3, rng.uniform(0.05, 0.3))
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    killed = resume_until_done(artifacts, out, kills, *LONG)
    assert killed >= 5, f"only {killed} of {len(kills)} kills landed before the run finished"
    assert_same_long_run(reference_dir, reference_out, artifacts, out)
    assert "iterations=70 validations=11" in run.last_stdout

    # The budget is spent: resume() trains nothing more and returns the same result.
    before, logged = checkpoint_files(artifacts), logs(artifacts)
    out.unlink()
    assert run(artifacts, out, *LONG) == 0
    assert "epochs=3 stopped_early=False iterations=70 validations=11" in run.last_stdout
    assert_same_long_run(reference_dir, reference_out, artifacts, out)
    assert checkpoint_files(artifacts) == before and logs(artifacts) == logged


def test_sigkill_around_each_decision_of_validations_inside_epochs(tmp_path):
    """The scripted run validating every 2 steps (4 an epoch): early stopping ends it at
    validation 5, inside epoch 3. Killed after validation 1's decision and between validation
    2's and 4's checkpoint and their deletions, it keeps the same checkpoints."""
    flags = ("--scripted", "composed", "--valid-every", "2")
    reference = tmp_path / "reference"
    assert run(reference / "artifacts", reference / "final.pt", *flags) == 0
    assert "epochs=3 stopped_early=True iterations=10 validations=5" in run.last_stdout
    kills = [[AFTER, "1"], [IN_END, "2"], [IN_END, "4"]]
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    assert resume_until_done(artifacts, out, kills, *flags) == len(kills)
    assert_same_run(reference / "artifacts", reference / "final.pt", artifacts, out)
    assert sorted(checkpoint_files(artifacts)) == ["epoch-2", "epoch-2-iteration-2", "epoch-3"]
    assert sorted(checkpoint_files(artifacts)) == sorted(checkpoint_files(reference / "artifacts"))

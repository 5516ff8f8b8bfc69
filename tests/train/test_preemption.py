"""Preemption with real processes: SIGTERM sent to the process group (what `scancel` and
`kill -TERM -PGID` do) during a training iteration, during validation, during a checkpoint
write, before the first iteration and with data-loader workers running. Each run exits with
the preemption exit code after a checkpoint of where it stopped, and its resume ends with the
parameters, optimizer state and metric logs of an uninterrupted run, having redone no
training iteration that was checkpointed."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from tests import fork_server
from tests.train.test_crash_resume import assert_same_run

SCRIPT = Path(__file__).with_name("crash_run.py")
EPOCHS, ITERATIONS = 4, 30  # crash_run.py: 960 items in batches of 32
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def command(artifact_dir: Path, out: Path, *flags: str) -> list[str]:
    """The arguments of `python` (the run is forked by tests/fork_server.py)."""
    return [str(SCRIPT), str(artifact_dir), str(out), *flags]


def finish(artifact_dir: Path, out: Path, *flags: str) -> int:
    """Run to the end (resuming); the training iterations it ran."""
    done = fork_server.run(
        command(artifact_dir, out, *flags), capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return int(done.stdout.split("trained=")[1].split()[0])


def preempt(artifact_dir: Path, out: Path, *flags: str, number: int = signal.SIGTERM):
    """Start the run in its own process group, wait for its MARK, signal the whole group,
    then let it go on; its exit code, stdout and stderr."""
    artifact_dir.mkdir(parents=True, exist_ok=True)
    errors = artifact_dir.parent / "stderr.txt"
    with errors.open("w") as stderr:
        process = fork_server.popen(
            command(artifact_dir, out, *flags),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,  # its own process group, data-loader workers included
        )
        assert process.stdout is not None and process.stdin is not None
        for line in process.stdout:
            if line.strip() == "MARK":
                break
        else:
            process.wait(timeout=60)
            raise AssertionError(f"no MARK ({process.returncode}):\n{errors.read_text()[-3000:]}")
        os.killpg(process.pid, number)
        process.stdin.write("go\n")
        process.stdin.flush()
        stdout, _ = process.communicate(timeout=600)
    return process.returncode, stdout, errors.read_text()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run."""
    directory = tmp_path_factory.mktemp("reference")
    assert finish(directory / "artifacts", directory / "final.pt") == EPOCHS * ITERATIONS
    return directory / "artifacts", directory / "final.pt"


def preempted_then_resumed(reference, tmp_path, *flags: str, workers: int = 0) -> str:
    """Preempt at the MARK `flags` place, check the exit, resume and compare; the
    preempted run's stderr."""
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    more = ("--workers", str(workers)) if workers else ()
    code, stdout, stderr = preempt(artifacts, out, *flags, *more)
    assert code == 128 + signal.SIGTERM, stderr[-3000:]
    assert "DataLoader worker" not in stderr
    trained = int(stdout.split("preempted code=143 trained=")[1].split()[0])
    log = (artifacts / "experiment.log").read_text()
    assert log.count("Preempted by SIGTERM: stopped at epoch") == 1
    assert "Preempted by SIGTERM" in stderr  # on the console too
    assert not out.exists()  # the code after `fit` did not run
    resumed = finish(artifacts, out, *more)
    assert trained + resumed == EPOCHS * ITERATIONS  # nothing checkpointed was redone
    assert_same_run(*reference, artifacts, out)
    return stderr


def test_sigterm_during_a_training_iteration(reference, tmp_path):
    preempted_then_resumed(reference, tmp_path, "--mark-at-step", "40")


def test_sigterm_during_validation_redoes_that_validation_only(reference, tmp_path):
    stderr = preempted_then_resumed(reference, tmp_path, "--mark-in-valid")
    assert f"stopped at epoch 1, iteration {ITERATIONS} (valid)" in stderr


def test_sigterm_during_a_checkpoint_write(reference, tmp_path):
    preempted_then_resumed(reference, tmp_path, "--mark-in-writer")


def test_sigterm_with_data_loader_workers_running(reference, tmp_path):
    preempted_then_resumed(reference, tmp_path, "--mark-at-step", "50", workers=2)


def test_sigterm_before_the_first_iteration_writes_nothing(reference, tmp_path):
    artifacts, out = tmp_path / "artifacts", tmp_path / "final.pt"
    code, stdout, stderr = preempt(artifacts, out, "--mark-in-setup")
    assert code == 128 + signal.SIGTERM, stderr[-3000:]
    assert "preempted code=143 trained=0" in stdout
    checkpoints = artifacts / "checkpoint"
    assert not checkpoints.exists() or list(checkpoints.iterdir()) == []
    assert (
        "during set-up: nothing was trained or written"
        in (artifacts / "experiment.log").read_text()
    )
    assert finish(artifacts, out) == EPOCHS * ITERATIONS
    assert_same_run(*reference, artifacts, out)

"""Training into `s3://` (moto's S3 server on 127.0.0.1, IAM authentication on): SIGKILL
inside the uploads, then `resume()` on a fresh machine (an empty staging directory) from the
bucket alone, bit-identical to a straight local run; a checkpoint whose marker never arrived
is ignored and deleted; wrong credentials stop the run before it trains."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

from burnish.storage import ObjectStore, pull

from tests import fork_server
from tests.train.test_crash_resume import assert_same_run, communicate
from tests.train.test_crash_resume import run as local_run

SCRIPT = Path(__file__).with_name("remote_run.py")
FLAGS = ("--epochs", "2")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def remote_run(url: str, out: Path, env: dict[str, str], *flags: str) -> tuple[int, str]:
    """Run the script into `url`; its exit status and stderr."""
    process = fork_server.popen(
        [str(SCRIPT), url, str(out), *FLAGS, *flags],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    _, stderr = communicate(process)
    if process.returncode not in (0, -signal.SIGKILL):
        raise AssertionError(f"remote_run.py failed ({process.returncode}):\n{stderr[-3000:]}")
    return process.returncode, stderr


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run into a local directory."""
    directory = tmp_path_factory.mktemp("reference")
    assert local_run(directory / "artifacts", directory / "final.pt", *FLAGS) == 0
    return directory / "artifacts", directory / "final.pt"


@pytest.fixture
def machine(s3_env, tmp_path, monkeypatch):
    """`machine(n)`: the environment of machine n, its own empty staging area."""
    monkeypatch.setenv("BURNISH_LOCK_LEASE", "1")  # a killed run's lock is dead after 1 s

    def environment(number: int) -> dict[str, str]:
        import os

        return {**os.environ, "BURNISH_STAGING": str(tmp_path / f"machine-{number}")}

    return environment


def bucket_copy(url: str, directory: Path) -> Path:
    """What the bucket holds (committed checkpoints and every file), in `directory`."""
    pull(ObjectStore(url), directory)
    return directory


def test_a_run_on_s3_equals_a_local_run(reference, bucket, machine, tmp_path, s3_env):
    url = f"s3://{bucket}/run"
    code, stderr = remote_run(url, tmp_path / "final.pt", machine(1))
    assert code == 0
    assert f"Artifact directory: {url}, staged in {tmp_path / 'machine-1'}" in stderr
    assert_same_run(*reference, bucket_copy(url, tmp_path / "copy"), tmp_path / "final.pt")
    keys = s3_env.objects(bucket)
    assert "run/.burnish.lock" not in keys  # released
    assert f"Artifact directory: {url}".encode() in keys["run/experiment.log"]


def test_sigkill_inside_uploads_then_resume_on_fresh_machines(
    reference, bucket, machine, tmp_path, s3_env
):
    url, out = f"s3://{bucket}/run", tmp_path / "final.pt"
    code, _ = remote_run(url, out, machine(1), "--kill-before-marker", "3")
    assert code == -signal.SIGKILL
    keys = s3_env.objects(bucket, "run/checkpoint/")
    unmarked = {k.split("/")[2] for k in keys} - {
        k.split("/")[2] for k in keys if k.endswith("COMMIT")
    }
    assert len(unmarked) == 1  # the third checkpoint: its files, never its marker
    (name,) = unmarked

    code, stderr = remote_run(url, out, machine(2), "--kill-at-put", "9")
    assert f"Ignoring checkpoint {name} in {url}: no commit marker" in stderr
    assert "Resumed from checkpoint" in stderr or "resume" in stderr
    assert code == -signal.SIGKILL
    killed = 2
    for number, flags in enumerate((["--kill-at-put", "5"], ["--kill-at-put", "14"], []), 3):
        code, stderr = remote_run(url, out, machine(number), *flags)
        assert "Resumed from checkpoint" in stderr  # from the bucket: machine n is empty
        killed += code == -signal.SIGKILL
        if code == 0:
            break
    if not out.exists():
        assert remote_run(url, out, machine(9))[0] == 0
    assert killed >= 3
    assert_same_run(*reference, bucket_copy(url, tmp_path / "copy"), out)
    keys = s3_env.objects(bucket)
    directories = {k.rsplit("/", 1)[0] for k in keys if k.startswith("run/checkpoint/")}
    assert all(f"{d}/COMMIT" in keys for d in directories)  # no marker-less leftovers
    assert "run/.burnish.lock" not in keys


def test_wrong_credentials_stop_the_run_before_it_trains(bucket, machine, tmp_path, s3_env):
    env = {**machine(1), "AWS_SECRET_ACCESS_KEY": "wrong"}
    process = fork_server.run(
        [str(SCRIPT), f"s3://{bucket}/run", str(tmp_path / "final.pt"), *FLAGS],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 1
    assert "StorageError" in process.stderr and "refused the credentials" in process.stderr
    assert "Training for" not in process.stderr
    assert s3_env.objects(bucket) == {}

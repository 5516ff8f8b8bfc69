"""An artifact directory that is a file, not writable, or on a full disk: one clear error naming
the path and the fix, before anything trains (real files, real permissions, real mounts)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import burnish as bn
from burnish.optim import AdamConfig
from burnish.train import EvaluatorBuilder
from burnish.train.loop.artifact_dir import check_artifact_dir
from burnish.train.metric import AccuracyMetric
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders

SCRIPT = Path(__file__).with_name("artifact_dir_run.py")


class Counted(Mlp):
    steps = 0

    def train_step(self, batch):
        Counted.steps += 1
        return super().train_step(batch)


def fit(artifact_dir):
    Counted.steps = 0
    learner = builder(artifact_dir, epochs=1).build(Counted(), AdamConfig().init(), 1e-3)
    return learner.fit(*loaders(train_items=64, valid_items=32))


def run_script(directory: Path, **popen) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        **popen,
    )


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """The one-line refusal the script printed; fails the test on anything else."""
    assert result.returncode == 3, result.stdout + result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("ArtifactDirError")]
    assert "Traceback" not in result.stdout
    return line


def test_a_file_in_place_of_the_directory_is_refused_before_training(tmp_path):
    path = tmp_path / "run"
    path.write_text("notes")
    with pytest.raises(bn.ArtifactDirError) as info:
        fit(path)
    assert str(info.value) == (
        f"The artifact directory '{path}' is a file, not a directory. Move or delete that "
        "file, or pass another artifact directory."
    )
    assert Counted.steps == 0 and path.read_text() == "notes"
    assert info.value.__context__ is None  # one error, no chained OSError traceback


def test_a_file_on_the_directorys_path_is_named(tmp_path):
    (tmp_path / "runs").write_text("")
    with pytest.raises(bn.ArtifactDirError, match=r"'.*/runs/mnist' cannot be created: a part"):
        fit(tmp_path / "runs" / "mnist")
    assert Counted.steps == 0


def test_the_evaluator_refuses_a_file_too(tmp_path):
    path = tmp_path / "eval"
    path.write_text("")
    evaluator = (
        EvaluatorBuilder(path).metrics(AccuracyMetric()).renderer(CliMetricsRenderer()).build(Mlp())
    )
    with pytest.raises(bn.ArtifactDirError, match="is a file, not a directory"):
        evaluator.eval("test", loaders(valid_items=32)[1])


def test_a_usable_directory_is_created_and_left_clean(tmp_path):
    path = check_artifact_dir(tmp_path / "a" / "b")
    assert path.is_dir() and list(path.iterdir()) == []  # the probe file is gone


def test_the_probe_file_of_a_killed_process_is_removed_by_the_next_check(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid runs no more (reused only after the pid space wraps)
    stale = tmp_path / f".burnish-write-check-{dead.pid}"
    stale.write_bytes(b"\0" * 10)
    live = tmp_path / f".burnish-write-check-{os.getppid()}"  # a running process's probe
    live.write_bytes(b"")
    check_artifact_dir(tmp_path)
    assert not stale.exists() and live.exists()


def test_a_read_only_directory_is_refused_with_its_path_and_the_fix(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    path.chmod(0o500)
    command = [sys.executable, str(SCRIPT), str(path)]
    if os.geteuid() == 0:  # root writes anyway: run it without the capabilities that allow it
        if shutil.which("setpriv") is None:
            pytest.skip("as root, needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    line = refusal(result)
    assert f"The artifact directory '{path}' is not writable by this process" in line
    assert f"chmod u+w '{path}'" in line and "Permission denied" in line


def test_a_write_the_system_refuses_is_reported_with_the_reason(tmp_path):
    """The probe write fails for real: a file size limit of 0 bytes (EFBIG) in the child."""

    def no_file_may_grow() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    result = run_script(tmp_path / "run", preexec_fn=no_file_may_grow)
    line = refusal(result)
    assert f"The artifact directory '{tmp_path / 'run'}' cannot hold a new file" in line
    assert "File too large" in line and "pass another artifact directory" in line


def _namespace_mount(options: str) -> bool:
    """Whether this machine lets a user namespace mount a tmpfs (not in every sandbox/CI)."""
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o {options} tmpfs /mnt"],
        capture_output=True,
        timeout=30,
    )
    return probe.returncode == 0


def run_on_tmpfs(tmp_path: Path, options: str, prepare: str) -> subprocess.CompletedProcess[str]:
    """The script on a tmpfs mounted at `tmp_path/mnt` in a private mount namespace: the mount
    vanishes with the process, whatever happens."""
    mount = tmp_path / "mnt"
    mount.mkdir()
    script = f'mount -t tmpfs -o {options} tmpfs "$1" && {prepare} && exec "$2" "$3" "$1/run" 2>&1'
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", script, "sh", str(mount), sys.executable, str(SCRIPT)],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.skipif(not _namespace_mount("size=64k"), reason="no user namespace mounts here")
def test_a_full_disk_is_refused_before_training(tmp_path):
    fill = 'mkdir "$1/run" && (dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; true)'
    result = run_on_tmpfs(tmp_path, "size=256k", fill)
    line = refusal(result)
    run = tmp_path / "mnt" / "run"
    assert f"The disk holding the artifact directory '{run}' is full" in line
    assert "No space left on device" in line and "Free space on it" in line


@pytest.mark.skipif(not _namespace_mount("ro,size=64k"), reason="no user namespace mounts here")
def test_a_read_only_file_system_is_refused_before_training(tmp_path):
    result = run_on_tmpfs(tmp_path, "ro,size=64k", "true")
    line = refusal(result)
    run = tmp_path / "mnt" / "run"
    assert f"The artifact directory '{run}' is on a read-only file system" in line
    assert "Remount it read-write" in line

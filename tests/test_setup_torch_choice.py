"""scripts/setup's choice of torch build (`--torch-plan`: what it would install, installing
nothing), on a PATH holding only the tools the script needs and, where a test says so, a real
`nvidia-smi` executable stub."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOOLS = ("bash", "dirname", "grep", "timeout")  # what the plan runs
GPU_LIST = "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)"


def _path(tmp_path: Path, nvidia_smi: str | None) -> str:
    """A PATH with symlinks to TOOLS and, given its script's body, an `nvidia-smi`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found is not None, tool
        (bin_dir / tool).symlink_to(found)
    if nvidia_smi is not None:
        stub = bin_dir / "nvidia-smi"
        stub.write_text(f"#!{shutil.which('bash')}\n{nvidia_smi}\n")
        stub.chmod(0o755)
    return str(bin_dir)


def plan(tmp_path: Path, nvidia_smi: str | None, choice: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BURNISH_TORCH"}
    env["PATH"] = _path(tmp_path, nvidia_smi)
    if choice is not None:
        env["BURNISH_TORCH"] = choice
    done = subprocess.run(
        [shutil.which("bash") or "bash", str(REPO / "scripts" / "setup"), "--torch-plan"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(line.split(": ", 1) for line in done.stdout.splitlines())


def test_no_nvidia_smi_gets_the_cpu_build_offline_where_pip_holds_it(tmp_path):
    result = plan(tmp_path, None)
    assert result["build"] == "cpu"
    offline = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--no-index", "-q",
         "torch==2.13.0+cpu"],
        capture_output=True, timeout=120,
    ).returncode == 0  # fmt: skip
    if offline:  # this machine: pip's find-links hold the CPU wheel, so no index is named
        assert result["pip install"] == "torch==2.13.0+cpu"
    else:
        assert result["pip install"] == (
            "torch==2.13.0+cpu --index-url https://download.pytorch.org/whl/cpu "
            "--extra-index-url https://pypi.org/simple"
        )


def test_a_listed_gpu_gets_the_cuda_build_and_never_a_cpu_wheel(tmp_path):
    result = plan(tmp_path, f'[ "$1" = -L ] && echo "{GPU_LIST}"')
    assert result == {"build": "cuda", "pip install": "torch==2.13.0,!=2.13.0+cpu"}


@pytest.mark.parametrize(
    "body",
    [
        "echo 'NVIDIA-SMI has failed because it could not communicate with the driver'; exit 9",
        "echo 'No devices were found'; exit 6",
        "exit 0",  # runs, lists nothing
    ],
)
def test_an_nvidia_smi_that_lists_no_gpu_gets_the_cpu_build(tmp_path, body):
    assert plan(tmp_path, body)["build"] == "cpu"


def test_the_variable_overrides_the_detection(tmp_path):
    gpu = f'echo "{GPU_LIST}"'
    assert plan(tmp_path / "a", gpu, "cpu")["build"] == "cpu"
    assert plan(tmp_path / "b", None, "cuda")["build"] == "cuda"
    assert plan(tmp_path / "c", gpu, "skip") == {"build": "skip", "pip install": ""}
    assert plan(tmp_path / "d", None, "auto")["build"] == "cpu"
    spec = "torch==2.13.0+cu130 --index-url https://download.pytorch.org/whl/cu130"
    assert plan(tmp_path / "e", None, spec) == {"build": "spec", "pip install": spec}


def test_a_wrong_value_is_refused_naming_the_values_it_takes(tmp_path):
    env = {**os.environ, "PATH": _path(tmp_path, None), "BURNISH_TORCH": "gpu"}
    done = subprocess.run(
        [shutil.which("bash") or "bash", str(REPO / "scripts" / "setup"), "--torch-plan"],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "BURNISH_TORCH must be auto, cpu, cuda, skip or a pip requirement" in done.stderr
    assert "Received: BURNISH_TORCH='gpu'" in done.stderr

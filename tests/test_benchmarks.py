"""Smoke test of `python -m benchmarks`: it runs on a tiny setting and writes valid JSON.

Benchmarks are not tests: nothing here looks at how fast anything is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import benchmark_children, fork_server

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.timeout(300)
def test_overhead_and_startup_run_and_write_json(tmp_path: Path, capsys) -> None:
    output = tmp_path / "results.json"
    code = benchmark_children.main(
        ["-b", "overhead", "startup", "--runs", "1", "--iterations", "2", "--no-lightning",
         "--output", str(output)]
    )  # fmt: skip
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    result = json.loads(output.read_text())
    assert result["failures"] == {}
    assert result["machine"]["nproc"] >= 1 and result["machine"]["torch"]
    assert "bf16" in result["machine"]["cpu"]  # the instruction set a time was measured with
    assert result["settings"]["runs"] == 1
    rows = {(r["benchmark"], r["contender"], r["measure"]): r for r in result["rows"]}
    for contender in ("plain", "custom", "learner"):
        row = rows[("overhead (2 it)", contender, "epoch time")]
        assert row["median"] > 0 and len(row["runs"]) == 1
        assert rows[("overhead (2 it)", contender, "peak RSS")]["median"] > 10  # MiB
    assert rows[("overhead (2 it)", "plain", "epoch time")]["ratio"] == 1.0
    assert rows[("startup", "import burnish", "import time")]["note"].endswith("import torch")
    assert rows[("overhead (2 it)", "lightning", "epoch time")]["median"] is None
    assert "overhead (2 it)" in stdout and "ratio" in stdout  # the table


def test_unknown_benchmark_is_refused(tmp_path: Path) -> None:
    done = _run("-b", "nope", "--output", str(tmp_path / "r.json"), timeout=60)
    assert done.returncode == 2
    assert "invalid choice: 'nope'" in done.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.timeout(300)
def test_guide_accuracy_learner_equals_the_plain_loop() -> None:
    """The guide recipe through the Learner gives the plain loop's test accuracy, epoch by epoch."""
    done = fork_server.run(  # forked (tests/fork_server.py)
        [
            "-m", "benchmarks.guide_accuracy",
            "--seeds", "7", "--plain", "--epochs", "2", "--limit", "1280",
        ],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    runs = dict(line.split(": ", 1) for line in done.stdout.splitlines() if " seed 7: " in line)
    learner = [float(x) for x in runs["learner seed 7"].split()]
    plain = [float(x) for x in runs["plain seed 7"].split()]
    assert len(learner) == 2 and learner == plain
    assert learner[1] > 50.0  # it learned something from 1,280 images
    assert "learner: last epoch over 1 seed(s)" in done.stdout


def _language_model_child(contender: str, steps: int) -> dict:
    done = fork_server.run(  # forked, from servers with one OpenMP thread
        ["-m", "benchmarks.language_model", "child", contender,
         "--mode", "target", "--steps", str(steps)],
        new_servers=True, cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1", "BURNISH_RENDERER": "cli"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("BENCH-RESULT "))
    return json.loads(line.removeprefix("BENCH-RESULT "))


@pytest.mark.timeout(300)
def test_the_language_model_learner_runs_the_plain_loops_recipe() -> None:
    """The Learner and the hand loop train the GPT on the same windows to the same perplexity."""
    plain, learner = _language_model_child("plain", 3), _language_model_child("learner", 3)
    assert plain["steps"] == learner["steps"] == 3
    assert learner["perplexity"] == pytest.approx(plain["perplexity"], rel=1e-4)
    assert 25.0 < plain["perplexity"] < 256.0  # learning, not at the target after 3 steps
    assert not plain["reached"] and not learner["reached"]
    assert learner["tokens_per_second"] > 0 and learner["cpu_seconds"] > 0

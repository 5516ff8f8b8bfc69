"""Smoke test of `python -m benchmarks -b distributed_overlap`: every contender runs under
torchrun with 2 Gloo ranks and the JSON has their rows.

Benchmarks are not tests: nothing here looks at how fast anything is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CONTENDERS = ("ddp", "post_backward", "overlap", "learner")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_distributed_overlap_runs_every_contender_and_writes_json(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "benchmarks", "-b", "distributed_overlap",
            "--runs", "1", "--iterations", "2", "--output", str(output),
        ],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(output.read_text())
    assert result["failures"] == {}
    rows = {r["contender"]: r for r in result["rows"]}
    assert set(rows) == set(CONTENDERS)
    for contender in CONTENDERS:
        assert rows[contender]["measure"] == "step time" and rows[contender]["median"] > 0
    assert rows["ddp"]["ratio"] == 1.0
    assert rows["overlap"]["target"] == "<= 1.05"

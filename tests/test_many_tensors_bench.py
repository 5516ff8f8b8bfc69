"""Smoke test of `python -m benchmarks -b many_tensors`: it runs tiny and writes valid JSON.

Benchmarks are not tests: nothing here looks at how fast anything is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import benchmark_children, fork_server

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)
def test_many_tensors_runs_every_contender_and_writes_json(tmp_path: Path, capsys) -> None:
    output = tmp_path / "results.json"
    code = benchmark_children.main(
        ["-b", "many_tensors", "--runs", "1", "--iterations", "2", "--output", str(output)]
    )
    stdout = capsys.readouterr().out
    assert code == 0, stdout
    result = json.loads(output.read_text())
    assert result["failures"] == {}
    assert result["settings"]["benchmarks"] == ["many_tensors"]
    label = "many tensors (2 it)"
    rows = {(r["benchmark"], r["contender"], r["measure"]): r for r in result["rows"]}
    measures = ("epoch time", "epoch CPU time")
    contenders = ("plain", "custom", "learner")
    assert set(rows) == {(label, c, m) for c in contenders for m in measures}
    for key, row in rows.items():
        assert row["median"] > 0 and len(row["runs"]) == 1, key
        assert row["target"] == ("" if key[1] == "plain" else "<= 1.03"), key
    assert rows[(label, "plain", "epoch time")]["ratio"] == 1.0
    assert label in stdout  # the table


def test_contenders_train_the_same_model_to_the_same_loss() -> None:
    """The plain and custom loops print the same train loss: the same work is timed."""
    losses = {}
    for contender in ("plain", "custom"):
        done = fork_server.run(  # forked (tests/fork_server.py)
            ["-m", "benchmarks.many_tensors", "child", contender, "--iterations", "3"],
            cwd=REPO, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        losses[contender] = [line for line in done.stdout.splitlines() if "train loss" in line]
    assert len(losses["plain"]) == 1 and losses["plain"] == losses["custom"]

"""Smoke test of `python -m benchmarks -b distributed_overlap`: every contender runs under
torchrun with 2 Gloo ranks and the JSON has their rows.

Benchmarks are not tests: nothing here looks at how fast anything is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import benchmark_children

CONTENDERS = ("ddp", "post_backward", "overlap", "learner")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_distributed_overlap_runs_every_contender_and_writes_json(tmp_path: Path, capsys) -> None:
    output = tmp_path / "results.json"
    code = benchmark_children.main(
        ["-b", "distributed_overlap", "--runs", "1", "--iterations", "2", "--output", str(output)]
    )
    assert code == 0, capsys.readouterr().out
    result = json.loads(output.read_text())
    assert result["failures"] == {}
    rows = {r["contender"]: r for r in result["rows"]}
    assert set(rows) == set(CONTENDERS)
    for contender in CONTENDERS:
        assert rows[contender]["measure"] == "step time" and rows[contender]["median"] > 0
    assert rows["ddp"]["ratio"] == 1.0
    assert rows["overlap"]["target"] == "<= 1.05"

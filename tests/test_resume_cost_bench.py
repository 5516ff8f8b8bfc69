"""Smoke test of `python -m benchmarks.resume_cost`: it runs tiny, each contender resumes at the
asked batch, and the items drawn are counted (a StatefulDataLoader draws only the next batch, a
plain DataLoader and an iterable every batch up to it). Nothing here looks at how fast.
"""

from __future__ import annotations

import pytest
from benchmarks import resume_cost


@pytest.mark.timeout(300)
def test_resume_cost_runs_every_loader_and_counts_the_items_drawn(capsys) -> None:
    resume_cost.main(["--steps", "40", "--batch-size", "3", "--runs", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "resume at step 40, batch size 3, 0 workers, median of 1"
    rows = {c[0].strip(): c[1:] for c in (line.strip("|").split("|") for line in lines[3:])}
    drawn = {name: cells[1].strip() for name, cells in rows.items()}
    assert drawn == {"burnish": "-", "stateful": "3", "torch": "123", "iterable": "123"}
    assert all(float(cells[0]) > 0 for cells in rows.values())

"""Smoke test of `python -m benchmarks.profiler_overhead`: it runs tiny (22 steps, one run each),
prints every measure for both fits and the profiled fit's trace size. Nothing here looks at how
fast."""

from __future__ import annotations

import pytest
from benchmarks import profiler_overhead


@pytest.mark.timeout(600)
def test_the_profiler_overhead_benchmark_measures_both_fits(capsys) -> None:
    profiler_overhead.main(["--iterations", "22", "--runs", "1"])
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("guide model, 22 steps of batch 64, 1 thread(s), median of 1")
    rows = {
        cells[0].strip(): [c.strip() for c in cells[1:]]
        for cells in (line.strip("|").split("|") for line in lines[start + 3 : start + 9])
    }
    assert list(rows) == [
        "fit",
        "plain step",
        "warm-up step",
        "window step",
        "step 20",
        "trace.json",
    ]
    for measure in ("fit", "plain step", "warm-up step", "window step", "step 20"):
        without, with_profile = (float(cell.split()[0]) for cell in rows[measure][:2])
        assert without > 0 and with_profile > 0
    assert float(rows["trace.json"][1].split()[0]) > 0
    assert lines[start + 9].startswith("the first profiled fit's warm-up step")


def test_too_few_steps_for_the_window_are_refused() -> None:
    with pytest.raises(SystemExit):
        profiler_overhead.main(["--iterations", "21"])

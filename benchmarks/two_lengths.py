"""What a loop costs per iteration and what it costs once per fit, from two lengths of a run.

A run of n iterations takes `t(n) = fixed + n * per_iteration`: `fixed` is what is paid once
(building the Learner, its files and logs, the renderer, the end of the epoch), the slope what
every iteration pays, which is what a long run feels. Each contender runs at the short length
and then at the long one in every round, rounds alternate the contenders (`harness.alternate`),
and each round gives one slope `(t_long - t_short) / (long - short)` and one intercept
`t_short - slope * short`; the table shows their medians over the rounds.

    python -m benchmarks -b overhead --device cuda --lengths 300 3000
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from benchmarks import harness

Child = Callable[[int], dict[str, Any]]  # runs a contender once for n iterations


def fit_line(lengths: tuple[int, int], seconds: tuple[float, float]) -> tuple[float, float]:
    """(seconds per iteration, fixed seconds) of the line through the two timed runs.

    Raises:
        ValueError: if the lengths are not two different positive counts.
    """
    short, long = lengths
    if not 0 < short < long:
        raise ValueError(
            f"the two lengths must be positive and the first the shorter. Received: {lengths}."
        )
    slope = (seconds[1] - seconds[0]) / (long - short)
    return slope, seconds[0] - slope * short


def measure(
    children: dict[str, Child],
    lengths: tuple[int, int],
    runs: int,
    log: Callable[[str], None] | None = None,
) -> dict[str, list[dict[str, float]]]:
    """Per contender, one `{"ms_per_iteration", "fixed_s"}` per round (the short run, then the
    long one, for each contender in turn), from wall time, and the same from the process's
    CPU time (`cpu_ms_per_iteration`, `cpu_fixed_s`) where the children report it: the host's
    work, which a loaded machine's wall clock blurs and a launch-bound GPU step pays."""
    timed = {
        f"{name}@{n}": (lambda child=child, n=n: child(n))
        for name, child in children.items()
        for n in lengths
    }
    results = harness.alternate(timed, runs, log)
    lines: dict[str, list[dict[str, float]]] = {}
    for name in children:
        pairs = zip(results[f"{name}@{lengths[0]}"], results[f"{name}@{lengths[1]}"])
        lines[name] = []
        for short, long in pairs:
            slope, fixed = fit_line(lengths, (short["seconds"], long["seconds"]))
            line = {"ms_per_iteration": 1000 * slope, "fixed_s": fixed}
            if "cpu_seconds" in short and "cpu_seconds" in long:
                slope, fixed = fit_line(lengths, (short["cpu_seconds"], long["cpu_seconds"]))
                line.update(cpu_ms_per_iteration=1000 * slope, cpu_fixed_s=fixed)
            lines[name].append(line)
    return lines


def rows(
    label: str,
    lines: dict[str, list[dict[str, float]]],
    baseline: str,
    targets: dict[str, tuple[str, Callable[[float], bool]]],
) -> list[harness.Row]:
    """The per-iteration rows (ratio to `baseline`'s slope: what `targets` hold), then the
    fixed-cost rows (each noted with its difference to the baseline's)."""
    per_iteration = harness.rows_for(
        label, lines, "ms_per_iteration", "per iteration", "ms", baseline, targets
    )
    fixed = _fixed_rows(label, lines, "fixed_s", "fixed cost", baseline)
    rows = per_iteration + fixed
    if all("cpu_fixed_s" in line for runs in lines.values() for line in runs):
        key, measure = "cpu_ms_per_iteration", "CPU per iteration"
        rows += harness.rows_for(label, lines, key, measure, "ms", baseline)
        rows += _fixed_rows(label, lines, "cpu_fixed_s", "CPU fixed cost", baseline)
    return rows


def _fixed_rows(label, lines, key: str, measure: str, baseline: str) -> list[harness.Row]:
    """The intercepts, each noted with its difference to the baseline's."""
    fixed = harness.rows_for(label, lines, key, measure, "s", None)
    base = next((row.median for row in fixed if row.contender == baseline), None)
    for row in fixed:
        if row.contender != baseline and row.median is not None and base is not None:
            row.note = f"{row.median - base:+.3f} s over {baseline} per fit"
    return fixed

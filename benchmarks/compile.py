"""Opt-in `torch.compile`: the Learner with `LearnerBuilder.compile()` vs without.

Runs the overhead benchmark's `learner` contender with and without the builder's `compile()`
option, alternating, on CPU. Not in the default selection (compilation takes long on 2
cores): `-b compile`.
"""

from __future__ import annotations

from benchmarks import harness, overhead


def run(settings: harness.Settings, log) -> list[harness.Row]:
    iterations = settings.iterations or (100 if settings.quick else 300)
    contenders = overhead.children(("learner", "learner-compile"), iterations, settings.threads)
    log(f"compile: {iterations} iterations x {settings.runs} runs")
    results = harness.alternate(contenders, settings.runs, log)
    return harness.rows_for("compile (learner)", results, "seconds", "epoch time", "s", "learner")

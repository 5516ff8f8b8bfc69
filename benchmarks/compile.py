"""Opt-in `torch.compile` (item 8): the Learner with `LearnerBuilder.compile()` vs without.

Runs the overhead benchmark's `learner` contender with and without the builder's `compile()`
option, alternating, on CPU. Skipped, with a note, while `LearnerBuilder` has no `compile`.
Not in the default selection (compilation takes long on 2 cores): `-b compile`.
"""

from __future__ import annotations

from benchmarks import harness


def run(settings: harness.Settings, log) -> list[harness.Row]:
    from burnish.train import LearnerBuilder

    label = "compile (learner)"
    if not callable(getattr(LearnerBuilder, "compile", None)):
        return [
            harness.Row(
                label,
                "learner-compile",
                "epoch time",
                "s",
                None,
                [],
                note="skipped: LearnerBuilder has no compile() yet",
            )
        ]
    iterations = settings.iterations or (100 if settings.quick else 300)
    contenders = {
        name: (
            lambda name=name: harness.run_child(
                harness.module_argv(
                    "overhead", name, "--iterations", iterations, "--threads", settings.threads
                ),
                settings.threads,
            )
        )
        for name in ("learner", "learner-compile")
    }
    log(f"compile: {iterations} iterations x {settings.runs} runs")
    results = harness.alternate(contenders, settings.runs, log)
    return harness.rows_for(label, results, "seconds", "epoch time", "s", "learner")

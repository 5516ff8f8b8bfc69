"""Several runs side by side: what `burnish report DIR DIR ...` and `burnish summary DIR DIR ...`
show.

`collect_runs` reads each run's artifact directory (its learner summary, metric curves and
`config.json`) and names it; `comparison_rows` lines up each metric's final and best value in
every run, with a missing one where a run did not log it.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path, PurePath
from typing import Any

from burnish.cli.base import CommandError
from burnish.cli.run_data import MetricCurves, learner_summary, metric_curves, read_config

__all__ = [
    "ComparedRun",
    "ComparisonRow",
    "Outcome",
    "collect_runs",
    "comparison_rows",
    "lower_is_better",
    "run_names",
]

# Metrics whose lower values are better, by a word of their name (any case); others: higher.
_LOWER_IS_BETTER = re.compile(
    r"\b(loss|error|err|perplexity|mse|mae|rmse|wer|cer|distance|learning rate|lr|time|"
    r"latency|memory|cpu|cuda)\b",
    re.IGNORECASE,
)


@dataclasses.dataclass(frozen=True)
class ComparedRun:
    """One run of a comparison.

    Attributes:
        name: Its directory's name, or as many of its last path parts as it takes to tell it
            from the other runs (`a/run`, `b/run`).
        directory: The artifact directory, as given.
        summary: Its `LearnerSummary`, from the logs.
        curves: Per metric, its epoch values and iteration values per split.
        config: `config.json` parsed, or None when there is none or it cannot be read.
        config_note: Why `config` is None (no file, not JSON), else None.
    """

    name: str
    directory: Path
    summary: Any  # LearnerSummary
    curves: list[MetricCurves]
    config: Any
    config_note: str | None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """A metric's result in one run: its last epoch value and its best (None epochs: an
    evaluation, which has one value and no epoch)."""

    final: float
    final_epoch: int | None
    best: float
    best_epoch: int | None


@dataclasses.dataclass(frozen=True)
class ComparisonRow:
    """One metric on one split, in every run.

    Attributes:
        split: `Train`, `Valid` or `Test (<evaluation>)`.
        metric: The metric's name.
        lower_is_better: Which way `best` was taken (`lower_is_better(metric)`).
        outcomes: Per run, in the runs' order; None where the run did not log the metric.
    """

    split: str
    metric: str
    lower_is_better: bool
    outcomes: list[Outcome | None]

    @property
    def is_evaluation(self) -> bool:
        return self.split.startswith("Test")

    def leader(self, field: str) -> float | None:
        """The best of the runs' `final` or `best` values (NaN left out); None if none is."""
        values = [getattr(o, field) for o in self.outcomes if o is not None]
        values = [v for v in values if not math.isnan(v)]
        if not values:
            return None
        return min(values) if self.lower_is_better else max(values)


def collect_runs(directories: Sequence[Path]) -> list[ComparedRun]:
    """Read every run, in order, and name them.

    Raises:
        CommandError: naming the first directory that is not a run (missing, a file, no
            metric logs) and why, or a run given twice.
    """
    _refuse_repeats(directories)
    names = run_names(directories)
    runs = []
    for name, directory in zip(names, directories):
        summary = learner_summary(directory)
        config, note = read_config(directory)
        runs.append(
            ComparedRun(name, directory, summary, metric_curves(directory, summary), config, note)
        )
    return runs


def run_names(directories: Sequence[Path]) -> list[str]:
    """Each directory's name; where names repeat, as many last path parts as tell them apart.

    Example:
        >>> run_names([Path("sweep/a/run"), Path("sweep/b/run"), Path("other")])
        ['a/run', 'b/run', 'other']
    """
    parts = [Path(directory).resolve().parts for directory in directories]
    depth = [1] * len(parts)
    while True:
        names = [str(PurePath(*p[-d:])) for p, d in zip(parts, depth)]
        repeated = {n for n in names if names.count(n) > 1}
        grow = [i for i, n in enumerate(names) if n in repeated and depth[i] < len(parts[i])]
        if not grow:
            return names
        for i in grow:
            depth[i] += 1


def comparison_rows(runs: Sequence[ComparedRun]) -> list[ComparisonRow]:
    """Each metric of each split that any run logged: train, valid, then each evaluation."""
    splits: dict[str, list[dict[str, Any]]] = {"Train": [], "Valid": []}
    for run in runs:
        metrics = run.summary.metrics
        splits["Train"].append({m.name: m for m in metrics.train})
        splits["Valid"].append({m.name: m for m in metrics.valid})
    tags = sorted({tag for run in runs for tag in run.summary.metrics.test})
    for tag in tags:
        splits[f"Test ({tag})"] = [
            {m.name: m for m in run.summary.metrics.test.get(tag, [])} for run in runs
        ]
    rows = []
    for split, per_run in splits.items():
        names = sorted({name for metrics in per_run for name in metrics})
        evaluation = split.startswith("Test")
        for name in names:
            outcomes = [_outcome(metrics.get(name), evaluation) for metrics in per_run]
            rows.append(ComparisonRow(split, name, lower_is_better(name), outcomes))
    return rows


def lower_is_better(metric: str) -> bool:
    """Whether `metric`'s lower values are better, told from its name (the logs do not say):
    a loss, error, perplexity, learning rate, time or memory; any other metric: higher."""
    return _LOWER_IS_BETTER.search(metric) is not None


def _outcome(metric: Any, evaluation: bool) -> Outcome | None:
    if metric is None or not metric.entries:
        return None
    entries = metric.entries
    numbers = [e for e in entries if not math.isnan(e.value)]
    if numbers:
        pick = min if lower_is_better(metric.name) else max
        best = pick(numbers, key=lambda e: e.value)  # the first epoch of equal values
    else:
        best = entries[-1]
    last = entries[-1]
    if evaluation:
        return Outcome(last.value, None, best.value, None)
    return Outcome(last.value, last.step, best.value, best.step)


def _refuse_repeats(directories: Sequence[Path]) -> None:
    seen: dict[Path, Path] = {}
    for directory in directories:
        key = Path(directory).resolve()
        if key in seen:
            raise CommandError(
                f"{directory} is given twice (as {seen[key]} and {directory}): each run can be "
                "compared once. Pass each run's directory once."
            )
        seen[key] = Path(directory)

"""Differential suite through the Learner: the epoch value users read equals the documented one.

A model whose `valid_step` replays pre-made outputs batch by batch (tests/train/metric/
replay.py) is fitted with every numeric metric registered for validation; the epoch value the
summary table shows, the metric store gives checkpoint strategies and early stopping, and the
renderer is told at the epoch's end must equal the reference (tests/train/metric/reference.py)
to 1e-6 — not the count-weighted mean of the logged batch values.
"""

from __future__ import annotations

import math

import pytest

from burnish.optim import SgdConfig
from burnish.train import LearnerBuilder, LearnerSummary
from burnish.train.metric.store import Aggregate, MetricStore
from burnish.train.split import Split

from tests.train.metric import reference
from tests.train.metric.replay import (
    METRICS,
    EpochValues,
    MetricCase,
    Replayer,
    close,
    epoch,
)

SCENARIOS = ("random", "ties", "padding", "one-class")


def _groups() -> list[tuple[str, list[MetricCase]]]:
    """The metric cases by task, in groups whose names (log files) are unique."""
    groups: list[tuple[str, list[MetricCase]]] = []
    for case in METRICS:
        name = case.build().name
        for task, members in groups:
            if task == case.task and all(m.build().name != name for m in members):
                members.append(case)
                break
        else:
            groups.append((case.task, [case]))
    return groups


GROUPS = _groups()


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize(
    ("task", "cases"), GROUPS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(GROUPS)]
)
def test_the_learners_epoch_value_is_the_documented_one(tmp_path, task, cases, scenario) -> None:
    batches = epoch(scenario, seed=11)
    metrics = [case.build() for case in cases]
    renderer = EpochValues()
    builder = LearnerBuilder(tmp_path).renderer(renderer).num_epochs(1)
    for metric in metrics:
        builder = builder.metric_valid_numeric(metric)
    learner = builder.build(Replayer(task), SgdConfig().init(), 0.1)
    learner.fit([batches[0]], batches)

    names = [metric.name for metric in metrics]
    summary = {s.name: s.entries for s in LearnerSummary.from_dir(tmp_path, names).metrics.valid}
    store = MetricStore.from_dir(tmp_path)
    wrong = []
    for case, metric in zip(cases, metrics):
        expected = reference.of(metric, [b.as_task(task).adapt(metric.input_type) for b in batches])
        shown = {
            "renderer": renderer.values.get(metric.name, math.inf),
            "store": store.find_metric(metric.name, 1, Aggregate.MEAN, Split.VALID),
            "summary": summary[metric.name][0].value if metric.name in summary else None,
        }
        for reader, value in shown.items():
            if value is None or not close(value, expected):
                wrong.append((case.id, reader, value, expected))
    assert not wrong, wrong

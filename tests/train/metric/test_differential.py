"""Differential suite, driven directly: every numeric metric's `value()` after an epoch of
updates equals its documented epoch value computed by scikit-learn / torchmetrics on the
epoch's items (tests/train/metric/reference.py), to 1e-6.

Epochs (tests/train/metric/replay.py): random batch sizes with a last batch of 1; random,
all right, all wrong, a class missing, tied scores (and probabilities on the threshold),
padding (with all-padding batches) and single-class batches; top-k, thresholds,
micro/macro/weighted and several betas. The same epochs go through the Learner in
test_differential_learner.py and under two ranks in test_differential_ranks.py.
"""

from __future__ import annotations

import pytest

from tests.train.metric import reference
from tests.train.metric.helpers import metadata
from tests.train.metric.replay import METRICS, SCENARIOS, MetricCase, close, epoch


def _inputs(case: MetricCase, batches, metric) -> list:
    return [b.as_task(case.task).adapt(metric.input_type) for b in batches]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
@pytest.mark.parametrize("case", METRICS, ids=lambda c: c.id)
def test_value_after_an_epoch_is_the_documented_one(case: MetricCase, scenario: str) -> None:
    for seed in range(2):
        metric = case.build()
        inputs = _inputs(case, epoch(scenario, seed), metric)
        for i, data in enumerate(inputs):
            metric.update(data, metadata(i + 1))
        expected, actual = reference.of(metric, inputs), float(metric.value())
        assert close(actual, expected), (case.id, scenario, seed, actual, expected)


@pytest.mark.parametrize("case", METRICS, ids=lambda c: c.id)
def test_value_is_the_documented_one_after_every_update(case: MetricCase) -> None:
    """Mid-epoch too: the running value is the definition applied to the batches so far."""
    metric = case.build()
    inputs = _inputs(case, epoch("random", 7, items=12), metric)
    for i, data in enumerate(inputs):
        metric.update(data, metadata(i + 1))
        expected = reference.of(metric, inputs[: i + 1])
        assert close(float(metric.value()), expected), (case.id, i)

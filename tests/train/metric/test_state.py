"""The shared on-device accumulation."""

from __future__ import annotations

import json
import math
import threading

import pytest
import torch

from burnish.errors import RecordError
from burnish.train.metric import (
    AccuracyMetric,
    ConfusionStatsInput,
    NumericEntry,
    NumericMetricState,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
)
from burnish.train.metric.state import sum_over_ranks


def test_update_weights_values_by_batch_size() -> None:
    state = NumericMetricState()
    entries = [state.update(torch.tensor(v), n) for v, n in [(10.0, 5), (40.0, 3), (0.0, 8)]]
    assert float(state.mean()) == pytest.approx((10 * 5 + 40 * 3) / 16)
    assert [e.count for e in entries] == [5, 3, 8]
    assert state.mean().dtype == torch.float64  # exact sums over long epochs


def test_mean_of_an_empty_state_is_nan() -> None:
    assert math.isnan(float(NumericMetricState().mean()))


def test_host_floats_stay_on_the_host() -> None:
    state = NumericMetricState()
    assert state.update(0.5, 1) == NumericEntry(0.5, 1)
    state.update(1.5, 1)
    assert isinstance(state.sum, float)
    assert float(state.mean()) == 1.0


def test_skip_undefined_leaves_nan_batches_out() -> None:
    state = NumericMetricState()
    state.update(torch.tensor(20.0), 4, skip_undefined=True)
    entry = state.update(torch.tensor(float("nan")), 6, skip_undefined=True)
    assert math.isnan(float(entry.value))
    assert float(state.mean()) == 20.0


def test_nan_is_kept_without_skip_undefined() -> None:
    state = NumericMetricState()
    state.update(torch.tensor(20.0), 4)
    state.update(torch.tensor(float("nan")), 6)
    assert math.isnan(float(state.mean()))


def test_add_pools_totals_and_returns_the_batch_ratio() -> None:
    state = NumericMetricState()
    assert float(state.add(torch.tensor(3.0), torch.tensor(4))) == 0.75
    assert math.isnan(float(state.add(torch.tensor(0.0), torch.tensor(0))))  # empty batch
    state.add(torch.tensor(1.0), 4)
    assert float(state.mean()) == 0.5


def test_record_round_trip_and_reset() -> None:
    state = NumericMetricState()
    state.update(torch.tensor(1.0 / 3.0, dtype=torch.float64), 3)
    restored = NumericMetricState()
    restored.load_record(state.to_record())
    assert float(restored.mean()) == float(state.mean())
    restored.reset()
    assert math.isnan(float(restored.mean()))


def test_load_record_names_the_missing_keys() -> None:
    with pytest.raises(RecordError, match=r"record of 'Loss' must have `sum` and `count`"):
        NumericMetricState().load_record({"sum": 1.0}, "Loss")


def test_a_state_of_several_totals_adds_elementwise_and_survives_json() -> None:
    state = NumericMetricState()
    state.add(torch.tensor([[1, 2], [3, 4], [5, 6]]), 2)
    state.add(torch.tensor([[1, 0], [0, 0], [1, 1]]), 3)
    assert state.mean().tolist() == [[2 / 5, 2 / 5], [3 / 5, 4 / 5], [6 / 5, 7 / 5]]
    restored = NumericMetricState()
    restored.load_record(json.loads(json.dumps(state.to_record())))
    restored.add(torch.ones(3, 2, dtype=torch.long), 1)
    state.add(torch.ones(3, 2, dtype=torch.long), 1)
    assert torch.equal(restored.mean(), state.mean())


def test_a_batch_of_no_item_adds_nothing() -> None:
    state = NumericMetricState()
    state.update(torch.tensor(50.0), 2)
    entry = state.update(torch.tensor(float("nan")), 0)  # the mean of nothing
    assert entry.count == 0 and float(state.mean()) == 50.0


class ThreadRanks:
    """`world` ranks as threads summing tensors at a barrier (a real all-reduce's contract)."""

    def __init__(self, world: int) -> None:
        self.world, self.tables = world, {}
        self.barrier = threading.Barrier(world, timeout=30)

    def run(self, function):
        results, errors = [None] * self.world, []

        def target(rank: int) -> None:
            calls = iter(range(1000))

            def reduce(table: torch.Tensor) -> torch.Tensor:
                call = next(calls)
                self.tables[(call, rank)] = table.clone()
                self.barrier.wait()
                total = sum(self.tables[(call, r)] for r in range(self.world))
                self.barrier.wait()
                return total

            try:
                results[rank] = function(rank, reduce)
            except BaseException as error:
                errors.append(error)
                self.barrier.abort()

        threads = [threading.Thread(target=target, args=(r,)) for r in range(self.world)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            raise errors[0]
        return results


def _metrics():
    return [
        PrecisionMetric.multiclass(1, "macro"),
        RecallMetric.multilabel(0.5, "micro"),
        PerplexityMetric(),
        AccuracyMetric(pad_token=0),
    ]


def _feed(metrics, batches) -> None:
    for scores, labels in batches:
        one_hot = torch.nn.functional.one_hot(labels, 4).bool()
        for metric in metrics:
            if isinstance(metric, (PrecisionMetric, RecallMetric)):
                metric.update(ConfusionStatsInput(scores, one_hot), None)
            else:
                metric.update(metric.input_type(scores, labels), None)


def test_states_summed_over_ranks_give_one_process_value() -> None:
    """Rank 2 saw nothing: its confusion counts are 0.0 and take the others' shape."""
    gen = torch.Generator().manual_seed(0)
    batches = [
        (torch.randn(n, 4, generator=gen), torch.randint(0, 4, (n,), generator=gen))
        for n in (5, 3, 1)
    ]
    alone = _metrics()
    _feed(alone, batches)
    shards = [batches[:2], batches[2:], []]

    def rank(index, reduce):
        metrics = _metrics()
        _feed(metrics, shards[index])
        records = sum_over_ranks([m.state for m in metrics], reduce)
        values = []
        for metric, record in zip(metrics, records):
            metric.state.load_record(json.loads(json.dumps(record)))
            values.append(float(metric.value()))
        return values

    expected = [float(m.value()) for m in alone]
    for values in ThreadRanks(3).run(rank):
        assert values == pytest.approx(expected, rel=1e-12)


def test_states_of_different_shapes_over_ranks_are_refused() -> None:
    def rank(index, reduce):
        state = NumericMetricState()
        state.add(torch.zeros(3, 4 + index), 1)
        return sum_over_ranks([state], reduce)

    with pytest.raises(ValueError, match="different shapes on different ranks"):
        ThreadRanks(2).run(rank)

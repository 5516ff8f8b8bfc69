"""The shared on-device accumulation."""

from __future__ import annotations

import math

import pytest
import torch

from burnish.errors import RecordError
from burnish.train.metric import NumericEntry, NumericMetricState


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

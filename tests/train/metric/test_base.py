"""The protocol's value types, formatting and adaptation."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch

from burnish.train.metric import (
    AccuracyInput,
    AccuracyMetric,
    LossInput,
    LossMetric,
    Metric,
    MetricEntry,
    Numeric,
    NumericEntry,
    adapt,
    format_float,
)

from tests.train.metric.helpers import metadata


def test_numeric_entry_serializes_as_value_comma_count() -> None:
    assert NumericEntry(torch.tensor(0.25), 64).serialize() == "0.25,64"
    assert NumericEntry(1.0 / 3.0, 7).serialize() == "0.3333333333333333,7"


def test_numeric_entry_round_trips_exactly() -> None:
    entry = NumericEntry(math.pi * 1e-5, 13)
    assert NumericEntry.deserialize(entry.serialize()) == entry
    assert NumericEntry.deserialize("2.5") == NumericEntry(2.5, 1)  # Burn's single value
    assert NumericEntry.deserialize(" 1e-3,4\n") == NumericEntry(0.001, 4)


@pytest.mark.parametrize("text", ["", "a,1", "1.0,2.5", "1,2,3"])
def test_numeric_entry_rejects_malformed_lines(text: str) -> None:
    with pytest.raises(ValueError, match="must be `value,count`"):
        NumericEntry.deserialize(text)


def test_metric_entry_holds_text() -> None:
    entry = MetricEntry("Cuda", "GPU #0 - Memory 1.00/80.00 GB", "1.0/80.0")
    assert (entry.name, entry.formatted, entry.serialized) == (
        "Cuda",
        "GPU #0 - Memory 1.00/80.00 GB",
        "1.0/80.0",
    )


def test_format_float_follows_burn() -> None:
    assert format_float(53.456, 2) == "53.46"
    assert format_float(0.05, 2) == "5.00e-02"  # below 0.1 ** (precision - 1)
    assert format_float(0.0, 2) == "0.00"
    assert format_float(float("nan"), 2) == "nan"


def test_numeric_format_shows_epoch_and_batch_with_unit() -> None:
    assert AccuracyMetric().format(40.0, 50.0) == "epoch 50.00 % - batch 40.00 %"
    assert LossMetric().format(0.5, 0.25) == "epoch 0.25 - batch 0.50"


def test_protocol_classes_are_abstract() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Metric()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="abstract"):
        Numeric()  # type: ignore[abstract]


def test_adapt_returns_an_input_unchanged() -> None:
    data = AccuracyInput(torch.zeros(2, 3), torch.zeros(2, dtype=torch.long))
    assert adapt(data, AccuracyInput) is data


def test_adapt_names_the_item_the_input_and_the_fix() -> None:
    with pytest.raises(TypeError, match=r"`dict` cannot be adapted to `LossInput`.*adapt\(self"):
        adapt({"loss": 1.0}, LossInput)


def test_adapt_rejects_an_adapt_method_returning_the_wrong_type() -> None:
    @dataclasses.dataclass
    class Confused:
        def adapt(self, input_type):
            return "not an input"

    with pytest.raises(TypeError, match=r"`Confused.adapt\(LossInput\)` must return a LossInput"):
        LossMetric().update(Confused(), metadata())

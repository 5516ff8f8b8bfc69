"""`ThroughputMetric`: items or tokens per second over the epoch, and MFU, against hand
computations with a controlled clock; then through a Learner run."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import burnish as bn
from burnish.optim import SgdConfig
from burnish.train import LearnerBuilder, SequenceOutput
from burnish.train.metric import LossMetric, ThroughputMetric

from tests.helpers import iteration_lines
from tests.train.metric.helpers import metadata, no_host_sync


class Clock:
    """Returns the given times in turn: the seconds `perf_counter` would have read."""

    def __init__(self, *times: float) -> None:
        self.times = list(times)
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.times.pop(0)


@dataclasses.dataclass
class Batch:
    batch_size: int


@dataclasses.dataclass
class Tokens:
    num_tokens: int | torch.Tensor


def run(metric, items):
    return [float(metric.update(item, metadata(i)).value) for i, item in enumerate(items, 1)]


def test_items_per_second_count_from_the_first_iteration() -> None:
    metric = ThroughputMetric(clock=Clock(10.0, 11.0, 13.0, 16.0))
    entries = run(metric, [Batch(8), Batch(8), Batch(8), Batch(4)])
    # Iteration 1 starts the clock; then 8 items in 1 s, 16 in 3 s, 20 in 6 s.
    assert entries == [0.0, 8.0, 16 / 3, 20 / 6]
    assert float(metric.value()) == 20 / 6
    assert metric.name == "Throughput" and metric.unit == "items/s"
    assert metric.companions() == ()


def test_a_new_epoch_restarts_the_clock() -> None:
    metric = ThroughputMetric(clock=Clock(0.0, 2.0, 100.0, 101.0))
    run(metric, [Batch(4), Batch(4)])
    assert float(metric.value()) == 2.0
    metric.clear()
    assert float(metric.value()) == 0.0
    assert run(metric, [Batch(5), Batch(5)]) == [0.0, 5.0]  # the gap between epochs is not counted


def test_tokens_come_from_a_sequence_output_shape() -> None:
    metric = ThroughputMetric(tokens=True, clock=Clock(0.0, 0.5, 1.0))
    targets = torch.zeros(4, 16, dtype=torch.long)  # 4 sequences of 16 tokens
    output = SequenceOutput(torch.tensor(1.0), torch.zeros(4, 16, 3), None, targets)
    assert output.num_tokens == 64
    assert run(metric, [output] * 3) == [0.0, 128.0, 128.0]
    assert metric.name == "Token Throughput" and metric.unit == "tokens/s"


def test_a_tensor_token_count_stays_on_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    metric = ThroughputMetric(tokens=True, clock=Clock(0.0, 2.0, 4.0))
    counts = [torch.tensor(7), torch.tensor(10), torch.tensor(30)]  # e.g. non-padding tokens
    with no_host_sync(monkeypatch):
        entries = [metric.update(Tokens(n), metadata(i)).value for i, n in enumerate(counts, 1)]
        value = metric.value()
    assert isinstance(entries[-1], torch.Tensor) and isinstance(value, torch.Tensor)
    assert [float(e) for e in entries] == [0.0, 5.0, 10.0]  # 10 / 2 s, 40 / 4 s
    assert float(value) == 10.0 and value.dtype == torch.float64


def test_mfu_is_the_share_of_the_peak_flop_rate() -> None:
    flops_per_item, peak = 3e9, 1.2e12
    metric = ThroughputMetric(flops_per_item=flops_per_item, peak_flops=peak, clock=Clock(0, 1, 4))
    [mfu] = metric.companions()
    assert mfu is metric.mfu and mfu.name == "MFU" and mfu.unit == "%"
    entries = []
    for i, item in enumerate([Batch(100), Batch(100), Batch(200)], 1):
        metric.update(item, metadata(i))
        entries.append(float(mfu.update(item, metadata(i)).value))
    throughput = 300 / 4  # items per second over iterations 2 and 3
    expected = 100 * throughput * flops_per_item / peak  # 18.75 %
    assert entries[0] == 0.0 and entries[1] == pytest.approx(100 * 100 * 3e9 / 1.2e12)
    assert entries[2] == pytest.approx(expected) and float(mfu.value()) == pytest.approx(expected)


def test_the_record_continues_the_epoch_without_the_downtime() -> None:
    uninterrupted = ThroughputMetric(clock=Clock(0.0, 1.0, 3.0, 4.0))
    run(uninterrupted, [Batch(2)] * 4)
    first = ThroughputMetric(clock=Clock(0.0, 1.0, 3.0))
    run(first, [Batch(2)] * 3)
    record = first.to_record()
    assert record == {"items": 4.0, "seconds": 3.0}
    resumed = ThroughputMetric(clock=Clock(500.0, 501.0))  # restarted 8 minutes later
    resumed.load_record(record)
    # The first update after a resume restarts the clock; the counts continue.
    assert run(resumed, [Batch(2), Batch(2)]) == [4 / 3, 6 / 4]
    assert float(resumed.value()) == float(uninterrupted.value()) == 6 / 4


def test_pause_leaves_the_paused_time_out() -> None:
    metric = ThroughputMetric(clock=Clock(0.0, 1.0, 60.0, 61.0))
    run(metric, [Batch(3), Batch(3)])
    metric.pause()  # e.g. a validation inside the epoch, 59 s long
    run(metric, [Batch(3), Batch(3)])
    assert float(metric.value()) == 6 / 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"flops_per_item": 1e9}, r"flops_per_item.*peak_flops.*together.*peak_flops=None"),
        ({"peak_flops": 1e12}, r"together.*flops_per_item=None"),
        ({"flops_per_item": -1.0, "peak_flops": 1e12}, r"positive finite.*flops_per_item=-1.0"),
        ({"flops_per_item": 1e9, "peak_flops": math.inf}, r"positive finite.*peak_flops=inf"),
        ({"flops_per_item": "6N", "peak_flops": 1e12}, r"number of FLOPs.*'6N'"),
    ],
)
def test_bad_flops_are_refused_with_the_fix(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        ThroughputMetric(**kwargs)


def test_an_output_without_a_count_is_explained() -> None:
    with pytest.raises(TypeError, match=r"`num_tokens`.*SequenceOutput.*Received: a Batch"):
        ThroughputMetric(tokens=True).update(Batch(3), metadata())
    with pytest.raises(TypeError, match=r"`batch_size`.*Received: a Tokens.*tokens=True"):
        ThroughputMetric().update(Tokens(3), metadata())


times = st.lists(
    st.floats(min_value=0.0, max_value=1e9, allow_nan=False), min_size=1, max_size=20
).map(lambda steps: [sum(steps[: i + 1]) for i in range(len(steps))])


@settings(max_examples=100, deadline=None)
@given(clock=times, data=st.data())
def test_any_clock_and_counts_give_the_hand_computed_rate(clock, data) -> None:
    sizes = data.draw(st.lists(st.integers(0, 10**9), min_size=len(clock), max_size=len(clock)))
    metric = ThroughputMetric(flops_per_item=2.0, peak_flops=1e3, clock=Clock(*clock))
    assert metric.mfu is not None
    for i, size in enumerate(sizes, 1):
        metric.update(Batch(size), metadata(i))
    seconds = clock[-1] - clock[0]
    expected = sum(sizes[1:]) / seconds if seconds > 0 else 0.0
    value = float(metric.value())
    assert not math.isnan(value) and value >= 0.0  # inf only for a denormal time: items / 1e-308
    assert value == pytest.approx(expected, rel=1e-9)
    mfu = float(metric.mfu.value())
    assert mfu == pytest.approx(expected * (100 * 2.0 / 1e3), rel=1e-9)


# -- through a Learner ---------------------------------------------------------------------


class Ticking:
    """A clock that advances `step` seconds per reading: a run whose timing is known."""

    def __init__(self, step: float) -> None:
        self.step, self.now = step, 0.0

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Regression(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def _output(self, batch):
        from burnish.train import RegressionOutput

        inputs, targets = batch
        output = self.linear(inputs)
        return RegressionOutput(torch.nn.functional.mse_loss(output, targets), output, targets)

    def train_step(self, batch):
        from burnish.train import TrainOutput

        item = self._output(batch)
        return TrainOutput(self, bn.backward(item.loss), item)

    def valid_step(self, batch):
        return self._output(batch)


def test_through_a_learner_logged_and_shown(tmp_path) -> None:
    from tests.train.test_builder_surface import RecordingRenderer

    bn.seed(1)
    gen = torch.Generator().manual_seed(0)
    sizes = [8, 8, 8, 8, 5]
    train = [(torch.randn(n, 3, generator=gen), torch.randn(n, 1, generator=gen)) for n in sizes]
    valid = train[:2]
    renderer = RecordingRenderer()
    throughput = ThroughputMetric(flops_per_item=40.0, peak_flops=1000.0, clock=Ticking(0.25))
    learner = (
        LearnerBuilder(tmp_path)
        .metric_train_numeric(throughput)
        .metrics(LossMetric())
        .renderer(renderer)
        .num_epochs(2)
        .build(Regression(), SgdConfig().init(), 0.01)
    )
    learner.fit(train, valid)
    for epoch in (1, 2):
        lines = iteration_lines(tmp_path / f"train/epoch-{epoch}/Throughput.log")
        # Iteration k (k >= 2): the items of iterations 2..k over (k - 1) ticks of 0.25 s.
        expected = [0.0] + [sum(sizes[1:k]) / (0.25 * (k - 1)) for k in range(2, 6)]
        assert [float(line.split(",")[0]) for line in lines] == expected
        mfu = iteration_lines(tmp_path / f"train/epoch-{epoch}/MFU.log")
        assert [float(line.split(",")[0]) for line in mfu] == pytest.approx(
            [100 * v * 40.0 / 1000.0 for v in expected]
        )
    # The dashboard shows both, with the epoch values at each epoch's end.
    shown = {name for snapshot in renderer.snapshots for name in snapshot.numeric}
    assert {"Throughput", "MFU"} <= shown
    train_ends = [values for split, _, values in renderer.epochs if split == "train"]
    assert train_ends[0]["Throughput"] == 29 / 1.0
    assert train_ends[0]["MFU"] == pytest.approx(100 * 29 * 40.0 / 1000.0)

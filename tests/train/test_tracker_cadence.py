"""The trackers' iteration points: a fixed cadence (`log_every(k)`), not the renderer's pace.

Two runs of the same training whose renderers are due at different moments write the same
CSV table; the points are the iterations whose global step (validation: iteration number) is
a multiple of k, each with its own batch values (those of Burn's file logs) and its own lr.
The SIGKILL-and-resume case is in test_crash_resume.py (`--trackers`).
"""

from __future__ import annotations

import random

import pytest

import burnish as bn
from burnish.lr_scheduler import LinearLrSchedulerConfig
from burnish.optim import AdamConfig
from burnish.train import LearnerBuilder
from burnish.train.logger import CsvLogger
from burnish.train.metric import LearningRateMetric, LossMetric
from burnish.train.renderer import NullRenderer

from tests.helpers import iteration_lines
from tests.train.helpers import Mlp, loaders

# 320 training images in batches of 32: 10 iterations per epoch; 128 validation: 4.
DATA = dict(batch_size=32, train_items=320, valid_items=128)
EVERY = 3
SCHEDULE = LinearLrSchedulerConfig(1e-2, 1e-3, 20)


class PacedRenderer(NullRenderer):
    """Due at moments drawn from a seeded generator: another wall-clock pace per seed."""

    def __init__(self, seed: int, chance: float) -> None:
        self.rng, self.chance = random.Random(seed), chance

    def due(self) -> bool:
        return self.rng.random() < self.chance


def fit(directory, renderer, lr_metric: bool = False, every: int | None = EVERY):
    bn.seed(3)
    builder = (
        LearnerBuilder(directory)
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(renderer)
        .num_epochs(2)
        .log_to(CsvLogger(directory / "metrics.csv"))
    )
    if lr_metric:
        builder = builder.metric_train_numeric(LearningRateMetric())
    if every is not None:
        builder = builder.log_every(every)
    learner = builder.build(Mlp(), AdamConfig().init(), SCHEDULE)
    learner.fit(*loaders(**DATA))
    return (directory / "metrics.csv").read_text().splitlines()


def iteration_rows(rows, metric):
    return [r.split(",")[:3] for r in rows[1:] if r.split(",")[1] and r.split(",")[3] == metric]


def test_two_runs_at_different_paces_write_the_same_table(tmp_path):
    never = fit(tmp_path / "never", NullRenderer())
    often = fit(tmp_path / "often", PacedRenderer(seed=1, chance=0.7))
    sometimes = fit(tmp_path / "sometimes", PacedRenderer(seed=2, chance=0.2))
    assert often == never
    assert sometimes == never
    # Steps 3, 6, 9 of epoch 1 and 12, 15, 18 (iterations 2, 5, 8) of epoch 2; validation
    # iteration 3 of each epoch.
    assert iteration_rows(never, "Loss") == [
        ["1", "3", "train"], ["1", "6", "train"], ["1", "9", "train"], ["1", "3", "valid"],
        ["2", "2", "train"], ["2", "5", "train"], ["2", "8", "train"], ["2", "3", "valid"],
    ]  # fmt: skip


def test_iteration_points_hold_their_own_values_and_lr(tmp_path):
    rows = fit(tmp_path, PacedRenderer(seed=3, chance=0.5))
    scheduler = SCHEDULE.init()
    lrs = [scheduler.step() for _ in range(20)]
    for split, epoch, iterations, steps in (
        ("train", 1, [3, 6, 9], [3, 6, 9]),
        ("train", 2, [2, 5, 8], [12, 15, 18]),
        ("valid", 2, [3], None),
    ):
        lines = iteration_lines(tmp_path / split / f"epoch-{epoch}" / "Loss.log")
        for n, iteration in enumerate(iterations):
            expected_loss = float(lines[iteration - 1].split(",")[0])
            prefix = f"{epoch},{iteration},{split},"
            [loss] = [float(r.split(",")[4]) for r in rows if r.startswith(prefix + "Loss,")]
            assert loss == expected_loss
            lr = [float(r.split(",")[4]) for r in rows if r.startswith(prefix + "lr,")]
            assert lr == ([] if steps is None else [pytest.approx(lrs[steps[n] - 1])])


def test_the_lr_row_is_left_out_beside_the_learning_rate_metric(tmp_path):
    rows = fit(tmp_path / "metric", NullRenderer(), lr_metric=True)
    metrics = {row.split(",")[3] for row in rows[1:]}
    assert metrics == {"Loss", "Learning Rate"}
    assert "lr" in {row.split(",")[3] for row in fit(tmp_path / "plain", NullRenderer())[1:]}


def test_the_default_cadence_is_50_steps(tmp_path):
    # 20 steps in all: no training iteration point at the default cadence, epoch rows only.
    rows = fit(tmp_path, PacedRenderer(seed=4, chance=1.0), every=None)
    assert [row for row in rows[1:] if row.split(",")[1]] == []
    assert len(rows) == 1 + 2 * 3  # per epoch: train Loss and lr, valid Loss


def test_the_trackers_add_no_read_back(tmp_path, monkeypatch):
    """The points ride on the processor's drains: as many as without trackers."""
    from burnish.train.report.processor import MetricsProcessor

    drain = MetricsProcessor._drain
    transfers = []

    def counting(self, state, *args):
        transfers.append(bool(state.pending))
        return drain(self, state, *args)

    monkeypatch.setattr(MetricsProcessor, "_drain", counting)
    rows = fit(tmp_path / "trackers", NullRenderer(), every=1)
    with_trackers = transfers.count(True)
    transfers.clear()
    bn.seed(3)
    learner = (
        LearnerBuilder(tmp_path / "plain")
        .metric_train_numeric(LossMetric())
        .metric_valid_numeric(LossMetric())
        .renderer(NullRenderer())
        .num_epochs(2)
        .build(Mlp(), AdamConfig().init(), SCHEDULE)
    )
    learner.fit(*loaders(**DATA))
    assert len(iteration_rows(rows, "Loss")) == 2 * (10 + 4)  # every iteration a point
    assert with_trackers == transfers.count(True) > 0


def test_log_every_must_be_positive(tmp_path):
    with pytest.raises(ValueError, match=r"`log_every` must be an integer >= 1. Received: log_"):
        LearnerBuilder(tmp_path).log_every(0)

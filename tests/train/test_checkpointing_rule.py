"""A checkpointing strategy changed on resume (issue 40, item 4): checkpoints record the rule
of their strategy (the metric, split, aggregate and direction it keeps the best of, composed
strategies part by part); a resume under another rule starts the strategy from a clean state
with one console line, never comparing against the old rule's best epoch; the same rule with
another number of checkpoints kept keeps its state. The rule is early stopping's
(`stopping_rule`, test_lineage.py). In-process runs of the MNIST MLP."""

from __future__ import annotations

import io

import burnish as bn
from burnish.optim import AdamConfig
from burnish.record import DefaultRecorder
from burnish.train.checkpoint import (
    ComposedCheckpointingStrategy,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)
from burnish.train.logger import FileMetricLogger
from burnish.train.metric.store import Aggregate, Direction
from burnish.train.renderer import CliMetricsRenderer

from tests.train.helpers import Mlp, builder, loaders

CHANGED = "The checkpointing strategy changed since the checkpoint"


def best_loss(split: str) -> MetricCheckpointingStrategy:
    return MetricCheckpointingStrategy("Loss", Aggregate.MEAN, Direction.LOWEST, split)


def composed(keep: int, best: MetricCheckpointingStrategy) -> ComposedCheckpointingStrategy:
    return ComposedCheckpointingStrategy.builder().add(KeepLastNCheckpoints(keep)).add(best).build()


def fit(artifact_dir, epochs, strategy, resume=False):
    """Train the MLP (4 iterations an epoch); what the console said."""
    bn.seed(5)
    said = io.StringIO()
    configured = (
        builder(artifact_dir, epochs=epochs, recorder=DefaultRecorder())
        .with_checkpointing_strategy(strategy)
        .renderer(CliMetricsRenderer(file=said))
        .deterministic()
    )
    if resume:
        configured = configured.resume()
    learner = configured.build(Mlp(), AdamConfig().init(), 1e-3)
    learner.fit(*loaders(batch_size=64, train_items=256, valid_items=64))
    return said.getvalue()


def best_epoch(artifact_dir, split, epochs):
    logger = FileMetricLogger(artifact_dir / split)
    means = {epoch: logger.read_aggregates(epoch)["Loss"].mean for epoch in range(1, epochs + 1)}
    return min(means, key=means.__getitem__)


def test_another_metric_split_starts_the_strategy_clean_with_one_line(tmp_path):
    fit(tmp_path, 3, best_loss("train"))
    kept = best_epoch(tmp_path, "train", 3)
    assert (tmp_path / "checkpoint" / f"epoch-{kept}").is_dir()
    strategy = best_loss("valid")
    said = fit(tmp_path, 4, strategy, resume=True)
    changes = [line for line in said.splitlines() if CHANGED in line]
    assert len(changes) == 1, said
    assert (
        "it kept MetricCheckpointingStrategy: Loss (train, Aggregate.MEAN, Direction.LOWEST)"
        in changes[0]
    )
    assert (
        "now MetricCheckpointingStrategy: Loss (valid, Aggregate.MEAN, Direction.LOWEST)"
        in changes[0]
    )
    # The new rule's best over the logs, not measured against the old rule's kept epoch; the
    # checkpoint the old rule kept is not deleted as if it had been the new rule's best.
    assert strategy.current == best_epoch(tmp_path, "valid", 4)
    assert (tmp_path / "checkpoint" / f"epoch-{kept}").is_dir()
    learner = DefaultRecorder().load(tmp_path / "checkpoint" / "epoch-4" / "learner")
    assert (
        learner["checkpointing_rule"]
        == "MetricCheckpointingStrategy: Loss (valid, Aggregate.MEAN, Direction.LOWEST)"
    )


def test_a_changed_part_of_a_composed_strategy_starts_it_clean(tmp_path):
    fit(tmp_path, 2, composed(2, best_loss("valid")))
    strategy = composed(2, best_loss("train"))
    said = fit(tmp_path, 2, strategy, resume=True)  # complete already: restored, nothing trained
    assert said.count(CHANGED) == 1, said
    assert "ComposedCheckpointingStrategy[KeepLastNCheckpoints; MetricCheckpointingStrategy" in said
    assert strategy.strategies[1].current is None
    assert strategy.deleted == [set(), set()]


def test_the_same_rule_keeping_more_checkpoints_keeps_its_state(tmp_path):
    fit(tmp_path, 2, composed(1, best_loss("valid")))
    strategy = composed(3, best_loss("valid"))
    said = fit(tmp_path, 2, strategy, resume=True)
    assert CHANGED not in said
    assert strategy.strategies[1].current == best_epoch(tmp_path, "valid", 2)

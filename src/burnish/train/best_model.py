"""The best epoch's model after `fit`, in one call (`TrainingResult.best_model`).

Burn keeps the best epoch's checkpoint (a `MetricCheckpointingStrategy`) and leaves reading it
back to the user: `MetricStore` finds the epoch, `load_file` its model. This does both: the
epoch the run's metric strategy kept (or the best under a metric given), its committed
checkpoint verified and loaded into a copy of the trained model, returned for inference.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from burnish.module import load_record, valid
from burnish.train.batch_check import model_device
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.checkpoint.strategy import (
    ComposedCheckpointingStrategy,
    MetricCheckpointingStrategy,
)
from burnish.train.metric.store import Aggregate, Direction, MetricStore, metric_name
from burnish.train.split import Split

if TYPE_CHECKING:
    from torch import nn

    from burnish.train.result import TrainingResult

__all__ = ["best_epoch", "best_model"]


def best_epoch(
    result: TrainingResult,
    metric: Any = None,
    direction: Direction | str | None = None,
    aggregate: Aggregate | str = Aggregate.MEAN,
    split: Split | str = Split.VALID,
) -> int:
    """The epoch of the best value of `metric` (default: the run's metric strategy's).

    Raises:
        ValueError: as `best_model`.
    """
    if metric is None:
        if direction is not None:
            raise ValueError(
                "`direction` goes with `metric`: without a metric the run's "
                "MetricCheckpointingStrategy decides. Received: metric=None, "
                f"direction={direction!r}."
            )
        strategy = _metric_strategy(result.checkpointing_strategy)
        name, aggregate, direction, split = (
            strategy.name, strategy.aggregate, strategy.direction, strategy.split
        )  # fmt: skip
    else:
        if direction is None:
            raise ValueError(
                f"`best_model(metric={metric_name(metric)!r})` needs a `direction`: "
                "Direction.LOWEST for a loss, Direction.HIGHEST for an accuracy."
            )
        name = metric_name(metric)
    if result.artifact_dir is None:
        raise ValueError("This result was not made by `fit`: it has no artifact directory.")
    store = MetricStore.from_dir(result.artifact_dir)
    epoch = store.find_epoch(name, Aggregate.parse(aggregate), Direction.parse(direction),
                             Split.parse(split))  # fmt: skip
    if epoch is None:
        raise ValueError(
            f"The run's logs in {result.artifact_dir} hold no {Split.parse(split)} values of "
            f"{name!r}: register the metric on that split, or name another."
        )
    return epoch


def best_model(
    result: TrainingResult,
    metric: Any = None,
    direction: Direction | str | None = None,
    aggregate: Aggregate | str = Aggregate.MEAN,
    split: Split | str = Split.VALID,
) -> nn.Module:
    """The model of the best epoch, for inference (see `TrainingResult.best_model`)."""
    if result.checkpointer is None:
        raise ValueError(
            "The run wrote no checkpoints, so only its last epoch's model exists "
            "(`result.model`). Add `.with_file_checkpointer(recorder)` to the builder."
        )
    epoch = best_epoch(result, metric, direction, aggregate, split)
    point = CheckpointId(epoch)
    kept = result.checkpointer.committed()
    if point not in kept:
        raise ValueError(
            f"The best epoch, {epoch}, has no checkpoint: the checkpointing strategy did not "
            f"keep it (kept: {', '.join(p.name for p in kept) or 'none'}). Keep it with a "
            "`MetricCheckpointingStrategy` of that metric in `with_checkpointing_strategy`."
        )
    from burnish.train.result import training_model

    trained = training_model(result.model)
    model = copy.deepcopy(trained)
    records = result.checkpointer.load(point, model_device(trained))
    return valid(load_record(model, records["model"]))


def _metric_strategy(strategy: Any) -> MetricCheckpointingStrategy:
    """The run's `MetricCheckpointingStrategy` (inside a composed one too)."""
    found = _metric_strategies(strategy)
    if len(found) != 1:
        raise ValueError(
            f"The run's checkpointing strategy ({strategy!r}) has {len(found)} "
            "MetricCheckpointingStrategy: say which metric's best epoch to load, e.g. "
            "`result.best_model('Accuracy', Direction.HIGHEST)`."
        )
    return found[0]


def _metric_strategies(strategy: Any) -> list[MetricCheckpointingStrategy]:
    if isinstance(strategy, MetricCheckpointingStrategy):
        return [strategy]
    if isinstance(strategy, ComposedCheckpointingStrategy):
        return [found for child in strategy.strategies for found in _metric_strategies(child)]
    return []

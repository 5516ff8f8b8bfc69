"""The best epoch's model after `fit`, in one call (`TrainingResult.best_model`).

Burn keeps the best epoch's checkpoint (a `MetricCheckpointingStrategy`) and leaves reading it
back to the user: `MetricStore` finds the epoch, `load_file` its model. This does both: the
epoch the run's metric strategy kept (or the best under a metric given), its committed
checkpoint verified and loaded into a copy of the trained model, returned for inference.
With `valid_every`, "epoch" N is validation N, and `valid/validations.json` names its checkpoint:
`epoch-E` for the one ending epoch E, `epoch-E-iteration-K` for one inside it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.module import load_record, valid
from burnish.train.checkpoint.file import CheckpointId
from burnish.train.checkpoint.strategy import (
    ComposedCheckpointingStrategy,
    MetricCheckpointingStrategy,
)
from burnish.train.logger.validations import VALIDATIONS_FILE, read_validations
from burnish.train.loop.batch_check import model_device
from burnish.train.loop.inference_twin import training_model
from burnish.train.metric.store import Aggregate, Direction, MetricStore, metric_name
from burnish.train.split import Split

if TYPE_CHECKING:
    from torch import nn

    from burnish.train.loop.result import TrainingResult

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
    kept = result.checkpointer.committed()
    point = _checkpoint_of(result, epoch, kept)
    trained = training_model(result.model)
    model = copy.deepcopy(trained)
    records = result.checkpointer.load(point, model_device(trained))
    return valid(load_record(model, records["model"]))


def _checkpoint_of(result: TrainingResult, number: int, kept: list[CheckpointId]) -> CheckpointId:
    """The kept checkpoint holding the model of validation `number` (the valid split's
    `epoch-<number>`): epoch `number`'s, or with `valid_every` the one its
    `valid/validations.json` entry names (see mid_epoch.py).

    Raises:
        ValueError: if no kept checkpoint holds it (says which validation and what was kept).
    """
    points = read_validations(Path(str(result.artifact_dir)) / Split.VALID)
    names = ", ".join(p.name for p in kept) or "none"
    fix = (
        "Keep it with a `MetricCheckpointingStrategy` of that metric in "
        "`with_checkpointing_strategy`."
    )
    if points is None:  # validation N is epoch N's
        if CheckpointId(number) in kept:
            return CheckpointId(number)
        raise ValueError(
            f"The best epoch, {number}, has no checkpoint: the checkpointing strategy did not "
            f"keep it (kept: {names}). {fix}"
        )
    point = next((p for p in points if p.validation == number), None)
    if point is None:
        raise ValueError(
            f"The best validation, {number}, is not in {Split.VALID}/{VALIDATIONS_FILE} of "
            f"{result.artifact_dir} (it lists {len(points)}): the logs and that file disagree; "
            "delete the file to read `valid/epoch-N` as epochs."
        )
    candidates = [CheckpointId(point.epoch, None if point.epoch_end else point.iteration)]
    if not point.epoch_end and point is points[-1]:  # early stopping ended the epoch there
        candidates.append(CheckpointId(point.epoch))
    found = next((c for c in candidates if c in kept), None)
    if found is not None:
        return found
    if point.epoch_end:
        raise ValueError(
            f"The best validation, {number} (the end of epoch {point.epoch}), has no "
            f"checkpoint: the checkpointing strategy did not keep epoch-{point.epoch} (kept: "
            f"{names}). {fix}"
        )
    raise ValueError(
        f"The best validation, {number}, ran inside epoch {point.epoch} (after train iteration "
        f"{point.iteration}), and no checkpoint holds it: the checkpointing strategy did not "
        f"keep {candidates[0].name} (kept: {names}); an epoch's checkpoint holds the model at "
        f"the epoch's end, not there. {fix}"
    )


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

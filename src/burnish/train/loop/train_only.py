"""A fit without validation: `learner.fit(dataloader_train)`, `SupervisedTraining(dir, train)`.

Burn's `SupervisedTraining::new(dir, train, valid)` and `Learner::fit` take both loaders;
burnish lets the validation loader be left out (an addition, docs/burn.md). Such a run has no
valid split at all: no `valid/` logs, no valid rows in the summary or the dashboard, and its
epoch checkpoints are numbered by epoch. The settings that only make sense with validation
are refused when `fit` starts, before anything is written, each named: they are collected
when the builder builds (`validation_settings`), as the builder alone knows which of them
were asked for (e.g. a checkpointing strategy given, not the default one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.components.early_stopping import EarlyStoppingStrategy
    from burnish.train.components.ema import EmaSettings
    from burnish.train.metric.base import Metric
    from burnish.train.settings.options import LearnerOptions

__all__ = ["train_only_options", "validation_settings"]


def validation_settings(
    metrics: Mapping[Split, Sequence[Metric]],
    early_stopping: EarlyStoppingStrategy | None,
    checkpointing_strategy: CheckpointingStrategy | None,
    valid_every: int | None,
    ema: EmaSettings | None,
) -> tuple[str, ...]:
    """The settings a builder was given that need a validation split, one phrase each.

    A metric registered on both splits (`metrics(...)`, or `metric_train_*` and
    `metric_valid_*` of one name) is not one: its train half works alone. A valid metric
    without a train metric of its name was registered for validation only (`metric_valid_*`).

    Args:
        metrics: the registered metrics of each split (before the settings add theirs).
        early_stopping: the early-stopping strategy, if any.
        checkpointing_strategy: the strategy given to `with_checkpointing_strategy`, None for
            the default one (which keeps the last 2 where no valid `Loss` is logged).
        valid_every: the `valid_every` setting.
        ema: the `with_ema` settings.
    """
    found: list[str] = []
    train_names = {m.name for m in metrics.get(Split.TRAIN, ())}
    for metric in metrics.get(Split.VALID, ()):
        if metric.name not in train_names:
            found.append(
                f"the valid metric {metric.name!r} (`metric_valid_numeric`/`metric_valid`; "
                "register it with `metric_train_*` or `metrics(...)` to log it in training)"
            )
    for owner, strategy in (
        ("early_stopping", early_stopping),
        ("with_checkpointing_strategy", checkpointing_strategy),
    ):
        watched = strategy.watched_metrics() if strategy is not None else []
        for name, split in watched:
            if split is Split.VALID:
                found.append(
                    f"`{owner}` watching the valid metric {name!r} (watch a train metric, "
                    "e.g. Split.TRAIN, or drop it)"
                )
    if valid_every is not None:
        found.append(f"`valid_every({valid_every})`")
    if ema is not None and ema.validate == "both":
        found.append(
            "`with_ema(..., validate='both')` (the average is still kept without "
            "validation: use validate='ema')"
        )
    return tuple(found)


def train_only_options(options: LearnerOptions) -> LearnerOptions:
    """The settings of a fit without a validation loader: no valid metrics.

    Raises:
        ValueError: if a setting needs validation, naming each one and the fix.
    """
    if options.validation.needed_by:
        settings = "; ".join(options.validation.needed_by)
        raise ValueError(
            "`fit` was given no validation data loader (`dataloader_valid` is None), but "
            f"these settings need validation: {settings}. Pass a validation data loader, "
            "e.g. `learner.fit(dataloader_train, dataloader_valid)`, or remove those "
            "settings to train without validation."
        )
    metrics = {**options.metrics, Split.VALID: ()}
    return dataclasses.replace(options, metrics=metrics)

"""The metrics a run has, from what the builder collected, and the checks that need them.

The settings add metrics of their own (`with_ema(validate="both")` the `Raw <name>` twins of
the validation metrics, `on_non_finite("skip")` `Skipped Steps`), and early stopping and the
checkpointing strategy watch metrics by name: both are settled once, when the learner is built,
so a wrong name fails then rather than after the first epoch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.train.components.ema import EmaSettings
    from burnish.train.components.non_finite import NonFiniteMode
    from burnish.train.metric.base import Metric

__all__ = ["check_ema_and_non_finite", "check_watched_metrics", "run_metrics"]


def check_ema_and_non_finite(
    ema: EmaSettings | None, on_non_finite: NonFiniteMode, strategy: str, compile_step: bool
) -> None:
    """Refuse `with_ema` and guarded steps where they cannot work.

    Raises:
        ValueError: with FSDP, or a guarded step inside a compiled whole step.
    """
    guarded = on_non_finite != "continue"
    if strategy == "fsdp" and (ema is not None or guarded):
        what = "with_ema(...)" if ema is not None else f"on_non_finite({on_non_finite!r})"
        raise ValueError(
            f"{what} does not support strategy('fsdp') yet: the average and the inf/NaN "
            "check would each see only this rank's shard of the weights and gradients. "
            "Use strategy('ddp'), or drop it (on_non_finite('continue') still reports a "
            "non-finite loss)."
        )
    if guarded and compile_step:
        raise ValueError(
            f"on_non_finite({on_non_finite!r}) guards the optimizer step, which "
            "`compile(step=True)` compiles into its graph. Use `compile()` (the forward "
            "only) with it, or on_non_finite('continue')."
        )


def run_metrics(
    registered: Mapping[Split, Sequence[Metric]],
    ema: EmaSettings | None,
    on_non_finite: NonFiniteMode,
) -> dict[Split, list[Metric]]:
    """The registered metrics, with those the settings add: `Raw <name>` twins of the
    validation metrics (`with_ema(validate="both")`) and `Skipped Steps` (`"skip"`).

    Raises:
        ValueError: if an added metric has the name of a registered one.
    """
    metrics = {split: list(split_metrics) for split, split_metrics in registered.items()}
    if ema is not None and ema.validate == "both":
        from burnish.train.components.ema_validation import raw_model_twins

        metrics[Split.VALID] += raw_model_twins(list(registered[Split.VALID]))
    if on_non_finite == "skip":
        from burnish.train.metric.skipped_steps import SkippedStepsMetric

        if not any(isinstance(m, SkippedStepsMetric) for m in metrics[Split.TRAIN]):
            metrics[Split.TRAIN].append(SkippedStepsMetric())
    for split, split_metrics in metrics.items():
        names = [m.name for m in split_metrics]
        clashes = sorted({name for name in names if names.count(name) > 1})
        if clashes:
            raise ValueError(
                f"The {split} metrics {clashes} are registered twice: `with_ema("
                "validate='both')` adds `Raw <name>` twins and on_non_finite('skip') adds "
                "`Skipped Steps`. Rename the metric of yours that has that name."
            )
    return metrics


def check_watched_metrics(
    watched: Sequence[tuple[str, Sequence[tuple[str, Split]]]],
    metrics: Mapping[Split, Sequence[Metric]],
    valid_every: int | None,
) -> None:
    """Every `(name, split)` a setting watches (`watched`: the setting's method name and its
    pairs) is a metric of the run; with `valid_every`, on the valid split.

    The default checkpointing strategy is not passed here: without a valid `Loss` it keeps the
    last 2.

    Raises:
        ValueError: naming the setting, the metric, what is registered and the fix.
    """
    for owner, pairs in watched:
        for name, split in pairs:
            names = [m.name for m in metrics[split]]
            if name not in names:
                raise ValueError(
                    f"`{owner}` watches the {split} metric {name!r}, but no {split} metric "
                    f"of that name is registered (registered: {names}). Add it with "
                    f"`metric_{split}_numeric(...)`."
                )
            if valid_every is not None and split is not Split.VALID:
                raise ValueError(
                    f"With `valid_every({valid_every})`, `{owner}` decides after every "
                    f"validation, so it must watch a valid metric. Received: the {split} "
                    f"metric {name!r}. Watch the valid split (e.g. Split.VALID), or validate "
                    "at epoch ends only (no `valid_every`)."
                )

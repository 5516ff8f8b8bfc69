"""What `Learner.fit` returns (Burn's `TrainingResult`, Burn main's `LearningResult`)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from torch import nn

from burnish.train.loop.inference_twin import inference_model, training_model  # re-exported

if TYPE_CHECKING:
    from burnish.export import ExportResult
    from burnish.train.checkpoint.file import FileCheckpointer
    from burnish.train.checkpoint.strategy import CheckpointingStrategy
    from burnish.train.metric.store import Aggregate, Direction
    from burnish.train.renderer.base import MetricsRenderer
    from burnish.train.split import Split

__all__ = ["LearningResult", "TrainingResult", "inference_model", "training_model"]


@dataclasses.dataclass
class TrainingResult:
    """The trained model and how the run ended.

    Attributes:
        model: the trained model for inference, as Burn main's `LearningResult` gives it
            (`model.valid()`): eval mode (no dropout), no autograd, sharing its parameters'
            storage with the model the learner trained (`learner.model()`), as the last epoch
            trained left it; with early stopping too, not the best epoch's (a
            `MetricCheckpointingStrategy` keeps that one's checkpoint). It saves as the
            trained model does; a learner given it trains the model it came from. Under
            FSDP it is the sharded model itself, in eval mode.
        summary: None unless the builder's `.summary()` was asked for: then the
            `LearnerSummary` of the run's metric logs over its `epochs_completed` epochs (its
            "Total Epochs"), also printed; still None without numeric metrics or log files,
            and on ranks other than 0.
        epochs_completed: how many epochs the run has finished (training, validation and
            epoch checkpoint done), those before a resume included; an interrupted epoch does
            not count (0 if none finished). `resume()` of a run that had ended returns the
            count it ended with. The learner's summary covers exactly these epochs.
        stopped_early: True when early stopping ended the run (also when `resume()` finds
            it ended so).
        interrupted: True when the interrupter (Ctrl-C, `q` in the dashboard) ended the run.
        stopped_non_finite: True when `on_non_finite("stop")` ended the run at a non-finite
            loss or gradient (no checkpoint was written after it; `resume()` continues from
            the last one).
        ema: with `with_ema(...)`, the averaged model (a copy of the model's structure, in
            eval mode), else None.
        artifact_dir: where logs and checkpoints were written.
        iterations: the optimizer steps the run has taken, those before a resume included
            (`max_iterations` counts them).
        validations: the validations the run has done, those before a resume included (one
            per epoch, plus those of `valid_every` inside the epochs).
        renderer: the dashboard the run drew on (Burn main's `LearningResult::renderer`),
            to hand to `EvaluatorBuilder(...).renderer(result.renderer)`; a `NullRenderer`
            on ranks other than 0, None in a result not made by `fit`.
        checkpointer: the run's checkpointer (None without checkpoints).
        checkpointing_strategy: the run's checkpointing strategy (which epochs it kept).
    """

    model: nn.Module
    summary: Any = None
    epochs_completed: int = 0
    stopped_early: bool = False
    interrupted: bool = False
    artifact_dir: Path | None = None
    stopped_non_finite: bool = False
    ema: nn.Module | None = None
    iterations: int = 0
    validations: int = 0
    renderer: MetricsRenderer | None = None
    checkpointer: FileCheckpointer | None = dataclasses.field(default=None, repr=False)
    checkpointing_strategy: CheckpointingStrategy | None = dataclasses.field(
        default=None, repr=False
    )

    def best_model(
        self,
        metric: Any = None,
        direction: Direction | str | None = None,
        aggregate: Aggregate | str = "mean",
        split: Split | str = "valid",
    ) -> nn.Module:
        """The model of the run's best epoch, loaded from its checkpoint, for inference.

        Without arguments, the epoch the run's `MetricCheckpointingStrategy` kept (Burn's
        default strategy keeps the lowest mean validation loss); with `metric` and
        `direction`, the best epoch under that metric, whose checkpoint the strategy must
        have kept. The model is a copy of the trained one (`result.model` is unchanged) in
        inference mode (`model.valid()`), on the trained model's device. With `with_ema`, it
        holds the trained weights of that epoch, not the average.

        Example:
            >>> best = result.best_model()  # doctest: +SKIP
            >>> best = result.best_model("Accuracy", Direction.HIGHEST)  # doctest: +SKIP

        Args:
            metric: a metric or its name; None: the run's metric strategy's.
            direction: `Direction.LOWEST` or `Direction.HIGHEST` (with `metric`).
            aggregate: how an epoch's values are reduced (`Aggregate.MEAN`).
            split: the split whose logs are read (`Split.VALID`).

        Raises:
            ValueError: when the run wrote no checkpoints, has no (or several)
                `MetricCheckpointingStrategy` and no metric is given, the metric has no
                values, or the best epoch's checkpoint was not kept.
            CheckpointError: if that checkpoint is corrupt.
        """
        from burnish.train.loop.best_model import best_model

        return best_model(self, metric, direction, aggregate, split)

    def export(
        self, example: Any, path: str | os.PathLike, to: str = "onnx", **options: Any
    ) -> ExportResult:
        """Export the trained model for inference (`burnish.export.export(self.model, ...)`):
        an ONNX file or a torch.export program, checked against the model before it is written.

        Example:
            >>> result.export(dataloader_valid, "artifacts/model", "onnx",
            ...               inputs="images")  # doctest: +SKIP
        """
        from burnish.export import export

        return export(self.model, example, path, to, **options)


LearningResult = TrainingResult
"""Burn main's name for the result of a training (`LearningResult { model, renderer }`)."""

"""Burn main's `TrainingComponents`: what `SupervisedTraining.launch` hands a custom learning
strategy (`crates/burn-train/src/learner/supervised/strategies/base.rs`).

A `SupervisedLearningStrategy` that implements Burn's `fit(training_components, learner,
dataloader_train, dataloader_valid, starting_epoch) -> (model, event_processor)` is run by
the strategy's default `train`, as Burn's: the learner is loaded from `checkpoint(epoch)` first,
`Start` is processed, `fit` runs, `End` is processed, and the result holds `model.valid()` and
the renderer. The components come from the `SupervisedTraining` settings:

- `event_processor`: burnish's metrics processor, its loggers and renderer (see
  `training_events.py`);
- `event_store`: the metric logs the checkpointing strategy reads (`MetricStore`);
- `checkpointer`: Burn's `LearningCheckpointer` (`checkpoint(learner, epoch, event_store)`,
  `load_checkpoint(learner, epoch)`) over the builder's checkpointer: the model, optimizer and
  scheduler records only, as Burn's. A custom loop's own state (data order, RNG) is its own:
  `resume()` and `checkpoint_every` belong to the learner's loop.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.module import into_record
from burnish.train.checkpoint.file import CheckpointId, FileCheckpointer
from burnish.train.checkpoint.strategy import CheckpointingStrategy
from burnish.train.loop.training_events import LearnerEvent, SupervisedTrainingEventProcessor
from burnish.train.metric.store import MetricStore
from burnish.train.report.processor import MetricsProcessor, SplitMetrics
from burnish.train.split import TRAINING_SPLITS, Split

if TYPE_CHECKING:
    from burnish.train.components.early_stopping import EarlyStoppingStrategy
    from burnish.train.interrupter import Interrupter
    from burnish.train.loop.learner import Learner
    from burnish.train.loop.result import TrainingResult

__all__ = ["LearningCheckpointer", "TrainingComponents", "train_with_components"]

log = logging.getLogger("burnish.train")


class LearningCheckpointer:
    """Burn's `LearningCheckpointer`: the strategy's actions on the three records of a learner.

    Args:
        checkpointer: the builder's (`with_file_checkpointer`, `with_default_checkpointers`,
            `with_custom_checkpointers`).
        strategy: which epochs to keep (`with_checkpointing_strategy`).
    """

    def __init__(self, checkpointer: FileCheckpointer, strategy: CheckpointingStrategy) -> None:
        self.checkpointer = checkpointer
        self.strategy = strategy

    def checkpoint(self, learner: Learner, epoch: int, store: MetricStore) -> None:
        """Save and delete what the strategy decides at the end of `epoch`."""
        for action in self.strategy.checkpointing(epoch, store):
            if action.kind == "save":
                records = {
                    "model": into_record(learner.model()),
                    "optim": learner.optim.to_record(),
                    "scheduler": learner.lr_scheduler.to_record(),
                }
                self.checkpointer.save(CheckpointId(epoch), records)
            elif action.epoch is not None:
                self.checkpointer.delete(CheckpointId(action.epoch))

    def load_checkpoint(self, learner: Learner, epoch: int) -> Learner:
        """Load `epoch`'s model, optimizer and scheduler records into `learner`."""
        records = self.checkpointer.load(CheckpointId(epoch))
        learner.load_model(records["model"])
        learner.load_optim(records["optim"])
        learner.load_scheduler(records["scheduler"])
        return learner


@dataclasses.dataclass
class TrainingComponents:
    """What a custom strategy's `fit` receives (Burn's fields, same names).

    Attributes:
        num_epochs: the total number of epochs.
        checkpoint: the epoch to continue from (`checkpoint(epoch)`), None for a fresh start.
        checkpointer: saves and loads the learner's checkpoints; None without one.
        grad_accumulation: iterations per optimizer step, None for every iteration.
        interrupter: stops the loop early (`should_stop()`, `get_message()`).
        early_stopping: the early-stopping strategy, if any.
        event_processor: takes the loop's `LearnerEvent`s (metrics, logs, renderer).
        event_store: the metric logs (what the strategies read).
        summary: the directory the `LearnerSummary` is read from, None without `summary()`.
    """

    num_epochs: int
    checkpoint: int | None
    checkpointer: LearningCheckpointer | None
    grad_accumulation: int | None
    interrupter: Interrupter
    early_stopping: EarlyStoppingStrategy | None
    event_processor: SupervisedTrainingEventProcessor
    event_store: MetricStore
    summary: Path | None = None

    @classmethod
    def from_learner(cls, learner: Learner) -> TrainingComponents:
        """The components of `learner.options` (a learner given to `launch`)."""
        from burnish.train.logger import FileMetricLogger
        from burnish.train.renderer import default_renderer

        options = learner.options
        if options.checkpointing.resume_from is not None and not isinstance(
            options.checkpointing.resume_from, int
        ):
            raise ValueError(
                "A custom learning strategy resumes from `checkpoint(epoch)` only. Received: "
                f"{options.checkpointing.resume_from!r} (`resume()` or `checkpoint('latest')`)."
            )
        loggers = dict(
            options.logging.loggers
            or {s: FileMetricLogger(options.artifact_dir / s) for s in TRAINING_SPLITS}
        )
        splits = [SplitMetrics(s, list(options.metrics[s]), loggers[s]) for s in TRAINING_SPLITS]
        processor = MetricsProcessor(splits, options.logging.renderer or default_renderer())
        checkpointer = None
        if options.checkpointing.checkpointer is not None:
            checkpointer = LearningCheckpointer(
                options.checkpointing.checkpointer, options.checkpointing.kept()
            )
        return cls(
            num_epochs=options.stopping.num_epochs or 1,
            checkpoint=options.checkpointing.resume_from,
            checkpointer=checkpointer,
            grad_accumulation=options.optimization.grads_accumulation,
            interrupter=options.stopping.interrupter,
            early_stopping=options.stopping.early_stopping,
            event_processor=SupervisedTrainingEventProcessor(
                processor, options.stopping.num_epochs or 1, options.stopping.interrupter
            ),
            event_store=MetricStore(loggers),
            summary=options.artifact_dir if options.logging.summary else None,
        )


def train_with_components(
    strategy: Any, learner: Learner, dataloader_train: Any, dataloader_valid: Any
) -> TrainingResult:
    """Burn's `SupervisedLearningStrategy::train`, inside what Burn's `launch` sets up for any
    strategy: the experiment log installed (and the directory's run lock held) for the run,
    then the checkpoint loaded, `Start`, the model summary, the strategy's `fit`, `End`; the
    `LearnerSummary` printed with `summary()`. The result holds `model.valid()`, the renderer
    and the epochs the loop ended (its `EndEpoch` events)."""
    from burnish.train.loop.artifact_dir import prepare_artifact_dir
    from burnish.train.loop.session import enter_directory
    from burnish.train.parallel.distributed import DistributedContext

    options = learner.options
    context = DistributedContext.detect(options.parallelism.device)
    prepare_artifact_dir(options.artifact_dir, context)
    with contextlib.ExitStack() as stack:
        enter_directory(
            stack,
            context,
            options.artifact_dir,
            options.logging.application_logger,
            options.storage,
        )
        return _train(strategy, learner, dataloader_train, dataloader_valid, context.is_main)


def _train(
    strategy: Any, learner: Learner, dataloader_train: Any, dataloader_valid: Any, main: bool
) -> TrainingResult:
    from burnish.module_summary import ModelSummary
    from burnish.train.loop.result import TrainingResult, inference_model
    from burnish.train.renderer.notebook import show_summary
    from burnish.train.report.announce import Announcer
    from burnish.train.report.summary import learner_summary

    components = TrainingComponents.from_learner(learner)
    processor = components.event_processor
    if main:
        Announcer(processor.renderer()).run_start(learner.options)
    if components.checkpoint is not None and components.checkpointer is not None:
        learner = components.checkpointer.load_checkpoint(learner, components.checkpoint)
    starting_epoch = (components.checkpoint or 0) + 1
    want_summary = components.summary is not None
    interrupter = components.interrupter
    processor.process_train(LearnerEvent.Start(components.num_epochs, starting_epoch))
    if main:  # as the learner's own loop: in the experiment log and on the dashboard
        model_summary = ModelSummary.from_module(learner.model())
        log.info("Model summary:\n%s", str(model_summary).rstrip("\n"))
        processor.renderer().model_summary(model_summary)
    model, event_processor = strategy.fit(
        components, learner, dataloader_train, dataloader_valid, starting_epoch
    )
    epochs = _epochs_ended(processor, starting_epoch)
    summary = None
    if want_summary and main:  # Burn: `summary.init().ok()`, None when the logs are no files
        with contextlib.suppress(OSError):
            summary = learner_summary(learner.options, epochs or None)
    event_processor.process_train(LearnerEvent.End(summary))  # closes the renderer
    if summary is not None:
        show_summary(summary)
    return TrainingResult(
        inference_model(model),
        summary=summary,
        epochs_completed=epochs,
        interrupted=interrupter.should_stop(),
        renderer=event_processor.renderer(),
        artifact_dir=learner.options.artifact_dir,
    )


def _epochs_ended(processor: SupervisedTrainingEventProcessor, starting_epoch: int) -> int:
    """The last epoch the loop ended: its last `EndEpoch` (else its train split's last
    `EndSplit`); `starting_epoch - 1` when it ended none (those before a resume count)."""
    ended = processor.epochs_ended or [e for (split, e) in processor.values if split is Split.TRAIN]
    return max(ended, default=starting_epoch - 1)

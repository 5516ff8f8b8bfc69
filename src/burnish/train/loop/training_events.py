"""Burn main's learner events and the event processor a custom learning strategy drives
(`LearnerEvent`, `TrainingItem`, `SupervisedTrainingEventProcessor`).

A custom `SupervisedLearningStrategy.fit` reports what its loop does with
`event_processor.process_train(LearnerEvent.ProcessedItem(item))`, ... as in Burn's
`custom-learning-strategy` example. The processor hands each item to burnish's
`MetricsProcessor`: the metrics update, their entries are logged (`train/epoch-N/...`) and the
renderer is drawn, as in the learner's own loop.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from burnish.train.interrupter import Interrupter
from burnish.train.metric.base import MetricMetadata
from burnish.train.renderer.base import TrainingProgress
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.data.dataloader.loader import Progress
    from burnish.train.renderer.base import MetricsRenderer
    from burnish.train.report.processor import MetricsProcessor

__all__ = ["LearnerEvent", "SupervisedTrainingEventProcessor", "TrainingItem"]


@dataclasses.dataclass
class TrainingItem:
    """One step's output with where the loop is (Burn's `TrainingItem::new(item, progress,
    iteration, lr)`)."""

    item: Any
    progress: Progress
    iteration: int | None = None
    lr: float | None = None


@dataclasses.dataclass(frozen=True)
class LearnerEvent:
    """What happened in the loop (Burn's `LearnerEvent` enum); build it with its variants:
    `LearnerEvent.Start(total_epochs, starting_epoch)`, `StartSplit(epoch_number,
    total_items)`, `ProcessedItem(item)`, `EndSplit(epoch)`, `EndEpoch(epoch)`, `End(summary)`.
    """

    kind: str
    epoch: int = 0
    total: int = 0
    item: TrainingItem | None = None
    summary: Any = None

    @classmethod
    def Start(cls, total_epochs: int, starting_epoch: int) -> LearnerEvent:
        """Training starts (Burn: `LearnerEvent::Start { total_epochs, starting_epoch }`)."""
        return cls("start", starting_epoch, total_epochs)

    @classmethod
    def StartSplit(cls, epoch_number: int, total_items: int) -> LearnerEvent:
        """A split's epoch starts (Burn: `StartSplit { epoch_number, total_items }`)."""
        return cls("start_split", epoch_number, total_items)

    @classmethod
    def ProcessedItem(cls, item: TrainingItem) -> LearnerEvent:
        """A step's output (Burn: `ProcessedItem(item)`)."""
        if not isinstance(item, TrainingItem):
            raise TypeError(
                "`LearnerEvent.ProcessedItem` takes a TrainingItem(item, progress, iteration, "
                f"lr). Received: {type(item).__name__}."
            )
        return cls("item", item=item)

    @classmethod
    def EndSplit(cls, epoch: int) -> LearnerEvent:
        """A split's epoch ended (Burn: `EndSplit(epoch)`)."""
        return cls("end_split", epoch)

    @classmethod
    def EndEpoch(cls, epoch: int) -> LearnerEvent:
        """An epoch ended, both splits (Burn: `EndEpoch(epoch)`)."""
        return cls("end_epoch", epoch)

    @classmethod
    def End(cls, summary: Any = None) -> LearnerEvent:
        """Training ended (Burn: `End(summary)`)."""
        return cls("end", summary=summary)


class SupervisedTrainingEventProcessor:
    """Burn's `SupervisedTrainingEventProcessor`: `process_train(event)`, `process_valid(event)`
    and `renderer()`, over burnish's `MetricsProcessor`.

    Args:
        processor: the metrics, their loggers and the renderer of the run.
        num_epochs: the run's epochs (until a `Start` event says otherwise).
        interrupter: the run's, handed to the renderer at `Start` (its `q` key stops the run).
    """

    def __init__(
        self, processor: MetricsProcessor, num_epochs: int, interrupter: Interrupter | None = None
    ) -> None:
        self.processor = processor
        self.num_epochs = num_epochs
        self.interrupter = interrupter or Interrupter()
        self.epochs: dict[Split, int] = {Split.TRAIN: 1, Split.VALID: 1}
        self.values: dict[tuple[Split, int], dict[str, float]] = {}
        self.epochs_ended: list[int] = []  # the `EndEpoch` events: what the result counts

    def process_train(self, event: LearnerEvent) -> None:
        """Handle an event of the train split (also `Start`, `EndEpoch`, `End`)."""
        self._process(Split.TRAIN, event)

    def process_valid(self, event: LearnerEvent) -> None:
        """Handle an event of the valid split."""
        self._process(Split.VALID, event)

    def renderer(self) -> MetricsRenderer:
        """The renderer the run drew on (Burn: `event_processor.renderer()`)."""
        return self.processor.renderer

    def _process(self, split: Split, event: LearnerEvent) -> None:
        if not isinstance(event, LearnerEvent):
            raise TypeError(
                f"`process_{split.value}` takes a LearnerEvent (e.g. "
                f"LearnerEvent.ProcessedItem(item)). Received: {type(event).__name__}."
            )
        if event.kind == "start":
            self.num_epochs = event.total
            self.processor.renderer.start(event.total, self.interrupter)
        elif event.kind == "start_split":
            self.epochs[split] = event.epoch
            self.processor.renderer.start_split(split)
        elif event.kind == "item":
            assert event.item is not None
            self._item(split, event.item)
        elif event.kind == "end_split":
            self.values[(split, event.epoch)] = self.processor.end_epoch(split, event.epoch)
        elif event.kind == "end_epoch":
            self.epochs_ended.append(event.epoch)
        elif event.kind == "end":
            self.processor.renderer.close()

    def _item(self, split: Split, item: TrainingItem) -> None:
        epoch, progress = self.epochs[split], item.progress
        iteration = item.iteration or 0
        metadata = MetricMetadata(progress, epoch, self.num_epochs, iteration, item.lr)
        where = TrainingProgress(
            epoch, self.num_epochs, iteration, progress.items_processed, progress.items_total
        )
        self.processor.process(split, item.item, metadata, where)

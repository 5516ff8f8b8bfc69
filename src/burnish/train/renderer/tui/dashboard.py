"""The TUI's state: what the learner reported and what the user selected."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from burnish.train.renderer.base import RenderSnapshot, TrainingProgress
from burnish.train.renderer.tui.history import MetricHistory
from burnish.train.renderer.tui.progress import ProgressEstimate
from burnish.train.split import TRAINING_SPLITS, Split

__all__ = ["DashboardState", "SplitState"]


@dataclass
class SplitState:
    """The latest values of one split.

    Attributes:
        progress: The latest progress, None before the split first ran.
        numeric: Metric name -> `(current, running)`; after `end_epoch` the running value is
            the epoch's final value (current is None when no batch value was seen).
        text: Text metric name -> formatted value.
        epoch_done: The last epoch that ended for this split (0 if none).
    """

    progress: TrainingProgress | None = None
    numeric: dict[str, tuple[float | None, float]] = field(default_factory=dict)
    text: dict[str, str] = field(default_factory=dict)
    epoch_done: int = 0


class DashboardState:
    """Everything the dashboard draws; mutated by the learner thread and the key thread.

    The owner serialises access (the TUI renderer holds a lock around every call).

    Args:
        num_epochs: Epochs of the run.
        clock: A monotonic clock in seconds.
    """

    def __init__(self, num_epochs: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.num_epochs = num_epochs
        self.clock = clock
        self.started = clock()
        self.mode = Split.TRAIN
        self.splits = {split: SplitState() for split in Split}
        self.test_name: str | None = None  # the data set an evaluation is on
        self.test_started = self.started
        self.history = MetricHistory()
        self.estimate = ProgressEstimate(clock)
        self.selected = 0
        self.recent = False
        self.stopping: str | None = None
        self.finished = False
        self.model: str | None = None
        self.keys = True  # whether keys are read (the controls panel says how to stop if not)

    def update(self, snapshot: RenderSnapshot) -> None:
        """Take in the values of one rendered iteration."""
        state = self.splits[snapshot.split]
        self.mode = snapshot.split
        state.progress = snapshot.progress
        state.numeric.update(snapshot.numeric)
        state.text.update(snapshot.text)
        currents = {name: current for name, (current, _) in snapshot.numeric.items()}
        self.history.push(snapshot.split, snapshot.progress, currents)
        if snapshot.split == Split.TRAIN:
            self.estimate.update(snapshot.progress)

    def end_epoch(self, split: Split, epoch: int, values: dict[str, float]) -> None:
        """Store the final epoch values of `split`."""
        state = self.splits[split]
        state.epoch_done = epoch
        for name, value in values.items():
            current = state.numeric.get(name, (None, value))[0]
            state.numeric[name] = (current, value)
        self.history.end_epoch(split, epoch, values)
        if split == Split.TRAIN:  # the epoch's items are all done, seen or not
            self.estimate.update(TrainingProgress(epoch, self.num_epochs, 0, 1, 1))

    def start_test(self, name: str) -> None:
        """An evaluation of the data set `name` begins: the test split starts afresh."""
        self.test_name = name
        self.mode = Split.TEST
        self.test_started = self.clock()
        self.splits[Split.TEST] = SplitState()

    def columns(self) -> list[Split]:
        """The splits the panels show: train and valid in a training run, the test split once
        an evaluation reported (alone when nothing trained)."""
        if self.test_name is None:
            return list(TRAINING_SPLITS)
        trained = any(self.splits[s].progress or self.splits[s].epoch_done for s in TRAINING_SPLITS)
        return [*TRAINING_SPLITS, Split.TEST] if trained else [Split.TEST]

    @property
    def selected_name(self) -> str | None:
        """The plotted metric, None until a numeric metric was reported."""
        names = self.history.names
        return names[self.selected % len(names)] if names else None

    def on_key(self, key: str) -> bool:
        """Apply a navigation key (`left`, `right`, `up`, `down`); returns whether it did."""
        count = len(self.history.names)
        if key in ("right", "left") and count:
            step = 1 if key == "right" else -1
            self.selected = (self.selected + step) % count
            return True
        if key in ("up", "down"):
            self.recent = not self.recent
            return True
        return False

    def text_names(self) -> list[str]:
        """Text metric names of the shown splits, in order of first appearance."""
        names: dict[str, None] = {}
        for split in self.columns():
            names.update(dict.fromkeys(self.splits[split].text))
        return list(names)

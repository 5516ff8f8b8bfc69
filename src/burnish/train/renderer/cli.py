"""Plain-text progress for logs, pipes and CI (Burn's `CliMetricsRenderer`)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from burnish.train.interrupter import Interrupter
from burnish.train.renderer.base import (
    MetricsRenderer,
    RenderSnapshot,
    check_num_epochs,
    check_split,
    format_value,
)
from burnish.train.split import Split

if TYPE_CHECKING:
    from burnish.module_summary import ModelSummary

__all__ = ["CliMetricsRenderer"]


class CliMetricsRenderer(MetricsRenderer):
    """Prints a progress line now and then and one line per epoch per split; no ANSI codes.

    A progress line is printed every `interval_s` seconds and, when `every_percent` is set,
    each time an epoch crosses another `every_percent` of its items. `due()` stays a cheap
    check: it counts calls (one per iteration) against a prediction of when the next percent
    step is crossed, made from the items per iteration seen so far.

    Lines look like::

        [train] epoch 2/10 | iteration 120 | items 3840/60000 (6.4%) | Loss 0.3124 (epoch 0.4010)
        [train] epoch 2/10 done in 12.3s | Loss 0.4010 | Accuracy 89.0000

    Args:
        interval_s: Seconds between two progress lines, or None for no time-based lines.
        every_percent: Print when an epoch crosses each multiple of this percentage (0, 100),
            or None.
        file: Where to print (default: `sys.stdout` at the time of printing).
        clock: A monotonic clock in seconds (injectable for tests).
    """

    def __init__(
        self,
        interval_s: float | None = 10.0,
        every_percent: float | None = None,
        file: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if interval_s is not None and not interval_s > 0:
            raise ValueError(
                f"`interval_s` must be > 0 or None. Received: interval_s={interval_s!r}."
            )
        if every_percent is not None and not 0 < every_percent < 100:
            raise ValueError(
                "`every_percent` must be in (0, 100) or None. "
                f"Received: every_percent={every_percent!r}."
            )
        self.interval_s = interval_s
        self.every_percent = every_percent
        self._file = file
        self._clock = clock
        self._deadline = math.inf
        self._calls = 0
        self._next_call = 1 if every_percent is not None else math.inf
        self._last_items: tuple[tuple[str, int], int, int] | None = None
        self._next_percent: dict[tuple[str, int], float] = {}
        self._phase_started = 0.0
        self._split_started: dict[Split, float] = {}  # from `start_split`
        self._interrupter: Interrupter | None = None
        self._num_epochs = 0
        self._test_name: str | None = None  # the data set an evaluation is on

    def start(self, num_epochs: int, interrupter: Interrupter) -> None:
        """Print the run's header and start the clocks."""
        check_num_epochs(num_epochs)
        self._interrupter = interrupter
        self._num_epochs = num_epochs
        now = self._clock()
        self._phase_started = now
        self._deadline = now + self.interval_s if self.interval_s is not None else math.inf
        self._print(f"Training for {num_epochs} epoch{'s' if num_epochs > 1 else ''}.")

    def start_test(self, name: str, interrupter: Interrupter) -> None:
        """Print which data set is evaluated; its lines say `[test <name>]`."""
        self._interrupter = interrupter
        self._num_epochs = 1
        self._test_name = name
        now = self._clock()
        self._phase_started = now
        self._deadline = now + self.interval_s if self.interval_s is not None else math.inf
        self._print(f"Evaluating {name}.")

    def start_split(self, split: Split) -> None:
        """Time `split`'s epoch from now (a validation inside an epoch: from its own start)."""
        self._split_started[check_split(split, tuple(Split))] = self._clock()

    def model_summary(self, summary: ModelSummary) -> None:
        """Print the model's parameter table."""
        self._print(str(summary).rstrip("\n"))

    def message(self, text: str) -> None:
        """Print `text` on a line of its own."""
        self._print(text)

    def due(self) -> bool:
        """Whether a progress line may be printed at this iteration."""
        self._calls += 1
        return self._calls >= self._next_call or self._clock() >= self._deadline

    def render(self, snapshot: RenderSnapshot) -> None:
        """Print a progress line if the interval passed or a percent step was crossed."""
        check_split(snapshot.split, tuple(Split))
        progress = snapshot.progress
        key = (snapshot.split, progress.epoch)
        now = self._clock()
        timed = now >= self._deadline
        crossed = False
        if self.every_percent is not None:
            percent = 100.0 * progress.fraction
            next_percent = self._next_percent.get(key, self.every_percent)
            crossed = percent >= next_percent
            while percent >= next_percent:
                next_percent += self.every_percent
            self._next_percent[key] = next_percent
        if timed or crossed:
            self._print(self.progress_line(snapshot))
            if self.interval_s is not None:
                self._deadline = now + self.interval_s
        self._predict_next_call(key, progress.items_processed, progress.items_total)

    def end_epoch(self, split: Split | str, epoch: int, values: dict[str, float]) -> None:
        """Print the epoch's final metric values and how long the epoch took."""
        split = check_split(split, tuple(Split))
        now = self._clock()
        elapsed = now - self._split_started.pop(split, self._phase_started)
        if split == Split.TEST:
            parts = [f"{self._label(split)} done in {elapsed:.1f}s"]
        else:
            parts = [f"[{split}] epoch {epoch}/{self._num_epochs} done in {elapsed:.1f}s"]
        parts += [f"{name} {format_value(value)}" for name, value in values.items()]
        self._print(" | ".join(parts))
        self._phase_started = now
        if self.every_percent is not None:
            self._next_call = self._calls + 1  # look at the first iteration of the next phase
        self._last_items = None

    def close(self) -> None:
        """Say why training stopped early, if it did."""
        interrupter, self._interrupter = self._interrupter, None
        if interrupter is not None and interrupter.should_stop():
            what = "Evaluation" if self._test_name is not None else "Training"
            self._print(f"{what} stopped: {interrupter.reason or 'stop requested'}.")

    def progress_line(self, snapshot: RenderSnapshot) -> str:
        """The progress line of `snapshot`, as `render` prints it (also the notebook
        renderer's plain-text progress)."""
        progress = snapshot.progress
        parts = [self._label(snapshot.split)]
        if snapshot.split != Split.TEST:
            parts[0] += f" epoch {progress.epoch}/{progress.epoch_total}"
        parts += [
            f"iteration {progress.iteration}",
            f"items {progress.items_processed}/{progress.items_total} ({progress.fraction:.1%})",
        ]
        for name, (current, running) in snapshot.numeric.items():
            parts.append(f"{name} {format_value(current)} (epoch {format_value(running)})")
        parts += [f"{name} {value}" for name, value in snapshot.text.items()]
        return " | ".join(parts)

    def _label(self, split: Split) -> str:
        """`[train]`, `[valid]`, or `[test <name>]` in an evaluation."""
        if split == Split.TEST and self._test_name is not None:
            return f"[test {self._test_name}]"
        return f"[{split}]"

    def _predict_next_call(self, key: tuple[str, int], items: int, total: int) -> None:
        """Set the call count at which the next percent step should be crossed."""
        last, self._last_items = self._last_items, (key, items, self._calls)
        if self.every_percent is None:
            self._next_call = math.inf
            return
        next_items = self._next_percent[key] / 100.0 * total
        if last is None or last[0] != key or items <= last[1] or next_items >= total:
            # No rate yet: look again next iteration. Past the last step: wait for end_epoch.
            self._next_call = self._calls + 1 if next_items < total else math.inf
            return
        per_call = (items - last[1]) / (self._calls - last[2])
        self._next_call = self._calls + max(1, math.ceil((next_items - items) / per_call))

    def _print(self, line: str) -> None:
        print(line, file=self._file or sys.stdout, flush=True)

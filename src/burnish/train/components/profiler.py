"""The profiler switch (`profile(steps=range(10, 20))`): `torch.profiler` over chosen steps.

The steps are global training steps (`TrainingState.step`: training iterations since the run
began, 1-based, a resume continuing the count), one window of consecutive steps. The profiler
is made only when the step before the window comes (its warm-up step, not recorded), records
the window's steps and is dropped after them: outside the window a fit pays one integer
comparison per training iteration. Each step ends at the train split's `iteration_end`, so
marker `ProfilerStep#N` spans from the end of step N-1 to the end of step N: step N's batch
loading, train step, optimizer step and metric updates, and whatever came between the two
steps (a checkpoint, a validation).

Once the window's last step ends (or the run ends inside it) the profile is written to
`<artifact_dir>/profile/`: `trace.json`, a Chrome trace (chrome://tracing, ui.perfetto.dev),
and the same trace as `<host>_<pid>.<time_ns>.pt.trace.json`, the name and layout
`torch.profiler.tensorboard_trace_handler` writes and TensorBoard's PyTorch profiler plugin
reads (a directory holding `*.pt.trace.json` files is one of its runs: `tensorboard --logdir
<artifact_dir>` shows it as the run `profile`). The top operations by self time go to
`experiment.log`. Only rank 0 profiles (registry.py).

A run that ends or stops inside the window writes the steps it ran; as with any loop that ends
before the profiler's schedule, what followed its last step (the validation, the last
checkpoint) is then in the trace under the marker of the step that did not come. A resumed run
profiles the steps of the window that remain, and its trace replaces `trace.json` (the
TensorBoard files of both are kept).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import operator
import os
import reprlib
import shutil
import socket
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burnish.train.components.component import Component
from burnish.train.split import Split

if TYPE_CHECKING:
    from torch.profiler import ProfilerAction, profile

    from burnish.train.components.loop_view import LoopView
    from burnish.train.loop.result import TrainingResult
    from burnish.train.loop.state import TrainingState
    from burnish.train.metric.base import MetricMetadata
    from burnish.train.report.announce import Announcer

__all__ = ["PROFILE_DIR", "ProfileSettings", "Profiler", "profile_settings"]

log = logging.getLogger("burnish.train")

PROFILE_DIR = "profile"
"""The profile's directory in the artifact directory."""

TRACE_FILE = "trace.json"
TOP_OPERATIONS = 10
MAX_STEPS = 1_000_000  # an iterable longer than this is refused (it may never end)


@dataclasses.dataclass(frozen=True)
class ProfileSettings:
    """What `profile(...)` asked for; checked by `profile_settings`.

    Attributes:
        steps: the global training steps to profile, consecutive, from 1.
        record_shapes: record the operators' input shapes.
        with_stack: record the Python stack of each operator (larger traces).
        memory: record tensor allocations and frees (`profile_memory`).
    """

    steps: range
    record_shapes: bool = False
    with_stack: bool = False
    memory: bool = False

    @property
    def first(self) -> int:
        return self.steps[0]

    @property
    def last(self) -> int:
        return self.steps[-1]

    def describe(self) -> str:
        """`steps 10-19` (or `step 10`)."""
        return _steps_text(self.first, self.last)


def profile_settings(
    steps: Iterable[int], record_shapes: bool, with_stack: bool, memory: bool
) -> ProfileSettings:
    """Checked `ProfileSettings`.

    Raises:
        TypeError: if `steps` is not an iterable of integers, or a flag not a bool.
        ValueError: if `steps` is empty, holds a step < 1, is not consecutive, or is longer
            than a million steps.
    """
    flags = {"record_shapes": record_shapes, "with_stack": with_stack, "memory": memory}
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise TypeError(
                f"`profile({name}=...)` must be True or False. Received: {name}={flag!r}."
            )
    return ProfileSettings(_window(steps), record_shapes, with_stack, memory)


def _window(steps: Iterable[int]) -> range:
    """`steps` as one range of consecutive steps >= 1."""
    if isinstance(steps, range):
        if not steps:
            raise _empty(steps)
        low, high = min(steps[0], steps[-1]), max(steps[0], steps[-1])
        if low != high and abs(steps.step) != 1:
            raise _not_consecutive(steps)
        return _checked(steps, low, high)
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Iterable):
        raise TypeError(
            "`profile(steps=...)` takes the global training steps to profile, e.g. "
            f"range(10, 20) or [5, 6, 7]. Received: {reprlib.repr(steps)}."
        )
    taken = [_step(value, steps) for value in itertools.islice(steps, MAX_STEPS + 1)]
    if not taken:
        raise _empty(steps)
    if len(taken) > MAX_STEPS:
        raise _too_long(steps)
    low, high = min(taken), max(taken)
    if len(set(taken)) != high - low + 1:
        raise _not_consecutive(steps)
    return _checked(steps, low, high)


def _checked(steps: Any, low: int, high: int) -> range:
    """The window `low..high` of `steps`, if it starts at 1 or later and is not too long."""
    if low < 1:
        raise ValueError(
            "`profile(steps=...)` counts global training steps from 1 (the run's first "
            f"iteration is step 1). Received step {low} in {reprlib.repr(steps)}."
        )
    if high - low + 1 > MAX_STEPS:
        raise _too_long(steps)
    return range(low, high + 1)


def _too_long(steps: Any) -> ValueError:
    return ValueError(
        f"`profile(steps=...)` takes at most {MAX_STEPS:,} steps (the profiler keeps every "
        f"event in memory). Received more: {reprlib.repr(steps)}. Profile a few, e.g. "
        "range(10, 20)."
    )


def _step(value: Any, steps: Any) -> int:
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError):
            return operator.index(value)
    raise TypeError(
        "`profile(steps=...)` takes integer steps. Received "
        f"{reprlib.repr(value)} in {reprlib.repr(steps)}."
    )


def _empty(steps: Any) -> ValueError:
    return ValueError(
        f"`profile(steps=...)` must name at least one step. Received: {reprlib.repr(steps)}. "
        "Give the global training steps to profile, e.g. range(10, 20)."
    )


def _not_consecutive(steps: Any) -> ValueError:
    return ValueError(
        "`profile(steps=...)` takes one window of consecutive steps (one trace). Received: "
        f"{reprlib.repr(steps)}. Give a range such as range(10, 20)."
    )


def _save(profiler: profile, directory: Path) -> Path:
    """Write `trace.json` (through a temporary file: a failed export keeps the last one) and
    its copy under the name `tensorboard_trace_handler` gives; the trace's path."""
    directory.mkdir(parents=True, exist_ok=True)
    trace, partial = directory / TRACE_FILE, directory / f".{TRACE_FILE}.tmp"
    try:
        profiler.export_chrome_trace(str(partial))
        os.replace(partial, trace)
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
    worker = f"{socket.gethostname()}_{os.getpid()}"
    shutil.copyfile(trace, directory / f"{worker}.{time.time_ns()}.pt.trace.json")
    return trace


def _steps_text(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


class Profiler(Component):
    """`torch.profiler.profile` over the global training steps of `settings.steps`.

    Args:
        settings: the steps and what to record.
    """

    def __init__(self, settings: ProfileSettings) -> None:
        self.settings = settings
        self.profiler: profile | None = None
        self.done = False  # the window is behind: nothing more to do
        self.passed = False  # the run started after the window
        self.began = 0  # the first step recorded
        self.written: tuple[int, int] | None = None  # the steps of the profile written
        self._run: LoopView | None = None

    def bind(self, run: LoopView) -> None:
        self._run = run

    @property
    def state(self) -> TrainingState:
        assert self._run is not None, "Profiler.bind(run) comes before the run starts"
        return self._run.state

    @property
    def directory(self) -> Path:
        assert self._run is not None, "Profiler.bind(run) comes before the run starts"
        return self._run.options.artifact_dir / PROFILE_DIR

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """A fit that fails inside the window still stops the profiler."""
        try:
            yield
        finally:
            if self.profiler is not None:
                self._stop(failed=True)

    def fit_start(self, resumed: bool) -> None:
        """Start now if the run's next step is the window's warm-up step or in the window."""
        following = self.state.step + 1
        if following > self.settings.last:
            self.done = self.passed = True
            self._announce().info(
                f"Profiling: {self.settings.describe()} came before this start (after step "
                f"{self.state.step}): nothing to profile."
            )
            return
        self._wake(following)

    def iteration_end(
        self, split: Split, metadata: MetricMetadata, values: Mapping[str, float] | None
    ) -> None:
        """A training step ended: the profiler's step (the profile written after the last)."""
        if split is not Split.TRAIN or self.done:
            return
        step = self.state.step
        if self.profiler is None:
            self._wake(step + 1)
            return
        self.profiler.step()  # after the window's last step, the trace is written here
        if step >= self.settings.last:
            self._stop()

    def fit_end(self, result: TrainingResult) -> None:
        """The run ended: a profile still recording is written; say what was not profiled."""
        if self.profiler is not None:
            self._stop()
        if self.passed or self.state.step >= self.settings.last:  # written (or warned)
            return
        self._tell_missing(result)

    # -- the profiler ----------------------------------------------------------------------

    def _wake(self, following: int) -> None:
        """Make the profiler if step `following` (the next) is the warm-up step or later."""
        if following < self.settings.first - 1:
            return
        import torch
        from torch.profiler import ProfilerActivity, profile

        cuda = any(p.device.type == "cuda" for p in self.state.model.parameters())
        activities = [ProfilerActivity.CPU]
        if cuda and torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.began = max(following, self.settings.first)
        self.profiler = profile(
            activities=activities,
            schedule=self._action,
            on_trace_ready=self._write,
            record_shapes=self.settings.record_shapes,
            with_stack=self.settings.with_stack,
            profile_memory=self.settings.memory,
        )
        self.profiler.step_num = following - 1  # its steps are the run's global steps:
        self.profiler.start()  # the marker of step `following` begins at the next step()
        self.profiler.step()

    def _action(self, step: int) -> ProfilerAction:
        """The schedule: warm up on the step before the window, record it, save at its end."""
        from torch.profiler import ProfilerAction

        first, last = self.settings.first, self.settings.last
        if step == last:
            return ProfilerAction.RECORD_AND_SAVE
        if first <= step < last:
            return ProfilerAction.RECORD
        return ProfilerAction.WARMUP if step == first - 1 else ProfilerAction.NONE

    def _stop(self, failed: bool = False) -> None:
        """Stop the profiler (writing what it recorded of the window); the window is done."""
        profiler, self.profiler, self.done = self.profiler, None, True
        assert profiler is not None
        if not failed:
            profiler.stop()
            return
        try:  # the fit's own error goes on; the profile of the steps before it is kept
            profiler.stop()
        except Exception:
            log.exception("Stopping the profiler after the failed fit failed.")

    def _write(self, profiler: profile) -> None:
        """The profiler's trace is ready: the Chrome trace, TensorBoard's file, the table. A
        failed write is a warning (the run trains on; a trace written before is kept)."""
        last = min(self.state.step, self.settings.last)
        if last < self.began:  # stopped before the window's first step: nothing of it ran
            return
        steps, directory = _steps_text(self.began, last), self.directory
        try:
            trace = _save(profiler, directory)
        except OSError as error:
            self._announce().warning(
                f"Writing the profile of {steps} to {directory} failed ({error}); training "
                "goes on without it. Free the disk or fix the directory's permissions."
            )
            return
        self.written = (self.began, last)
        log.info("Profile of %s, top operations by %s:\n%s", steps, *self._table(profiler))
        self._announce().info(
            f"Profiled {steps}: {trace} (chrome://tracing or ui.perfetto.dev); "
            f"TensorBoard: tensorboard --logdir {directory.parent} (run `{PROFILE_DIR}`)."
        )

    def _table(self, profiler: profile) -> tuple[str, str]:
        """The top operations: by self device time when a GPU was profiled, else CPU time."""
        events = profiler.key_averages()
        on_device = any(event.self_device_time_total > 0 for event in events)
        key = "self_device_time_total" if on_device else "self_cpu_time_total"
        table = events.table(sort_by=key, row_limit=TOP_OPERATIONS)
        return ("self device time" if on_device else "self CPU time"), table.rstrip("\n")

    def _tell_missing(self, result: TrainingResult) -> None:
        """The run ended before the window's end: say which steps have no profile, and why."""
        wanted, step = self.settings.describe(), self.state.step
        profiled = (
            f"profiled {_steps_text(*self.written)} only" if self.written else "nothing profiled"
        )
        if result.interrupted:
            self._announce().info(
                f"Profiling {wanted}: the run stopped after step {step} ({profiled}); resuming "
                "it profiles the steps that remain (the trace is then of those)."
            )
            return
        self._announce().warning(
            f"`profile(steps=...)` chose {wanted}, but the run ended after step {step} "
            f"({profiled}). Choose steps up to {step}, or train longer."
        )

    def _announce(self) -> Announcer:
        assert self._run is not None, "Profiler.bind(run) comes before the run starts"
        return self._run.announce

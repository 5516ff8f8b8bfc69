"""Signals the data-loader worker processes ignore (the preemption signals of a run).

A scheduler that takes a machine back (SLURM's `scancel`, `kill -TERM -PGID`, `docker stop`)
signals the whole process group, data-loader workers included. torch's workers die of SIGTERM,
and the main process would then fail with "DataLoader worker exited unexpectedly" instead of
checkpointing. While a run catches such signals (`ignored_in_workers`), the workers a burnish
`DataLoader` starts ignore them; the main process shuts them down when it stops.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterable, Iterator

__all__ = ["IgnoreSignals", "ignored_in_workers", "worker_init"]

_LOCK = threading.Lock()
_IGNORED: list[tuple[int, ...]] = []  # one entry per run catching signals (runs may nest)


@contextlib.contextmanager
def ignored_in_workers(signals: Iterable[int]) -> Iterator[None]:
    """Workers started inside the block ignore `signals`."""
    entry = tuple(int(s) for s in signals)
    with _LOCK:
        _IGNORED.append(entry)
    try:
        yield
    finally:
        with _LOCK:
            _IGNORED.remove(entry)


class IgnoreSignals:
    """A `worker_init_fn`: the worker ignores `signals` (picklable, for spawned workers)."""

    def __init__(self, signals: tuple[int, ...]) -> None:
        self.signals = signals

    def __call__(self, worker_id: int) -> None:
        for number in self.signals:
            signal.signal(number, signal.SIG_IGN)


def worker_init() -> IgnoreSignals | None:
    """The `worker_init_fn` for workers started now; None when no run catches signals."""
    with _LOCK:
        signals = tuple(sorted({s for entry in _IGNORED for s in entry}))
    return IgnoreSignals(signals) if signals else None

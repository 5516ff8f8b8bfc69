"""What burnish knows of torchdata's `StatefulDataLoader` and its `state_dict()`.

torchdata is optional: nothing here imports it. A loader is a `StatefulDataLoader` only if the
user's script imported torchdata to build it, so `is_stateful_loader` looks in `sys.modules`.
The state's layout is torchdata's (0.11): a single-process state has `_num_yielded` at
its top, a multi-process one a `_snapshot` whose main part names its `_num_workers`; both have
`_iterator_finished`, which makes the next `iter()` start a new epoch.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

__all__ = ["epoch_over", "is_stateful_loader", "record_error", "state_workers"]

# torchdata's key for "the iterator this state describes has run out".
_FINISHED = "_iterator_finished"


def is_stateful_loader(loader: Any) -> bool:
    """Whether `loader` is a `torchdata.stateful_dataloader.StatefulDataLoader`."""
    module = sys.modules.get("torchdata.stateful_dataloader")
    stateful = getattr(module, "StatefulDataLoader", None)
    return stateful is not None and isinstance(loader, stateful)


def epoch_over(state: dict[str, Any]) -> dict[str, Any]:
    """`state` with its epoch ended: the loader it is loaded into starts a new epoch at its
    next `iter()` instead of the batches left of this one."""
    return {**state, _FINISHED: True}


def state_workers(state: Mapping[str, Any]) -> int:
    """The `num_workers` of the loader `state` was taken from."""
    snapshot = state.get("_snapshot")
    if not isinstance(snapshot, Mapping):
        return 0
    return int(snapshot.get("_main_snapshot", {}).get("_num_workers", 0))


def record_error(record: Any, loader: Any) -> str | None:
    """What is wrong with `record` as a checkpoint's record of the StatefulDataLoader
    `loader`, with the fix; None if nothing is."""
    fields = isinstance(record, Mapping) and {"state", "drawn", "ended"} <= record.keys()
    if not fields or not isinstance(record["state"], Mapping):
        return (
            "The checkpoint's record of this data loader was not written by a torchdata "
            f"StatefulDataLoader (received {_shape(record)}): the run was trained with another "
            "kind of loader. Resume it with the loader it was trained with, or start afresh "
            "(a new artifact directory, or without `resume()`)."
        )
    saved, workers = state_workers(record["state"]), getattr(loader, "num_workers", 0)
    if (saved > 0) != (workers > 0) or (saved > 0 and saved != workers):
        return (
            f"The checkpoint's StatefulDataLoader state was taken with num_workers={saved}, "
            f"but this StatefulDataLoader has num_workers={workers}; torchdata restores a state "
            f"only into a loader with as many workers. Build the loader with "
            f"num_workers={saved} to resume this run."
        )
    return None


def _shape(record: Any) -> str:
    """A short description of a record: its keys, or its type."""
    if isinstance(record, Mapping):
        return f"a record with keys {sorted(map(str, record))}"
    return repr(record) if record is None else f"a {type(record).__name__}"

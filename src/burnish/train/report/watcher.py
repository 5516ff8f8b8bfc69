"""`Watcher`: a part of the run that looks at every iteration the metrics processor handles and
reads device values of its own back with the metrics' entries (no read-back of its own).

The non-finite guard watches the training losses; experiment tracking notes which iterations
are its points and logs their values once read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from torch import Tensor

    from burnish.train.metric.base import MetricMetadata
    from burnish.train.split import Split

__all__ = ["Watcher"]


@runtime_checkable
class Watcher(Protocol):
    def note(self, split: Split, row: int, item: Any, metadata: MetricMetadata) -> None:
        """An iteration of `split` (its step output `item`, or `NO_BATCH`) is about to update
        the metrics; its entries will be the split's pending row `row`."""

    def pending(self, split: Split) -> list[Tensor]:
        """Device values to read back with `split`'s pending entries, in order."""

    def drained(
        self, split: Split, names: Sequence[str], rows: Sequence[float], own: Sequence[float]
    ) -> None:
        """`split`'s pending rows were read back (over all ranks): `rows` holds `len(names)`
        values per row; `own`: the host values of what `pending` gave, in order."""

    def forget(self, split: Split) -> None:
        """`split`'s pending rows and epoch were dropped."""

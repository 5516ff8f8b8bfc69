"""Every score and target of the epoch, kept on the device (Burn's `PredictionAccumulatorState`).

Rank-based metrics (AUROC, AUC-PR) have no batch value and no running totals: their epoch value
is a function of all the epoch's scores at once. `PredictionAccumulator` keeps each batch's
`[batch_size, num_classes]` scores and targets where they live (no host read per iteration) and
hands them over concatenated. Under `torch.distributed` `gathered()` is a collective that
concatenates every rank's (each item counted once, whichever rank had it); before a checkpoint
the processor calls `gather_for_record()` on every rank so that rank 0's record holds the
epoch's items of all ranks, and a resumed run gives them back to rank 0 only.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from burnish.errors import RecordError
from burnish.train.metric.torchmetric import _tensor_from_record, _tensor_record

__all__ = ["PredictionAccumulator"]


def _world() -> tuple[int, int]:
    """(rank, world size) of the default process group, (0, 1) without one."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class PredictionAccumulator:
    """The epoch's predictions `[n, C]` and bool targets `[n, C]`, batch by batch."""

    def __init__(self) -> None:
        self.predictions: list[torch.Tensor] = []
        self.targets: list[torch.Tensor] = []
        self._for_record: tuple[torch.Tensor, torch.Tensor] | None = None

    def __len__(self) -> int:
        return len(self.predictions)

    def accumulate(self, predictions: torch.Tensor, targets: torch.Tensor) -> None:
        """Keep a batch (detached, on its device). No host sync."""
        self.predictions.append(predictions.detach())
        self.targets.append(targets.detach().bool())
        self._for_record = None

    def reset(self) -> None:
        """Free the epoch's tensors."""
        self.predictions.clear()
        self.targets.clear()
        self._for_record = None

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """This process's predictions and targets, concatenated (empty `[0, 0]` before any)."""
        if not self.predictions:
            return torch.zeros(0, 0), torch.zeros(0, 0, dtype=torch.bool)
        if len(self.predictions) > 1:  # concatenated once: later calls reuse it
            self.predictions[:] = [torch.cat(self.predictions)]
            self.targets[:] = [torch.cat(self.targets)]
        return self.predictions[0], self.targets[0]

    def gathered(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Every rank's predictions and targets, concatenated in rank order (a collective
        under `torch.distributed`; this process's alone otherwise)."""
        predictions, targets = self.tensors()
        _, world_size = _world()
        if world_size == 1:
            return predictions, targets
        return _all_gather_rows(predictions, targets)

    def gather_for_record(self) -> None:
        """Collective: keep every rank's items for `to_record` (rank 0 writes the checkpoint)."""
        if _world()[1] > 1:
            self._for_record = self.gathered()

    def to_record(self) -> dict[str, Any]:
        """The epoch's items (all ranks' after `gather_for_record`), as exact bytes."""
        predictions, targets = self._for_record or self.tensors()
        return {
            "predictions": _tensor_record(predictions),
            "targets": _tensor_record(targets),
        }

    def load_record(self, record: dict[str, Any], owner: str) -> None:
        """Restore a `to_record()`; under several ranks only rank 0 takes the items (the record
        holds every rank's), the others start the epoch empty.

        Raises:
            RecordError: if `record` is not a `to_record()`.
        """
        if not isinstance(record, dict) or not {"predictions", "targets"} <= set(record):
            received = sorted(record) if isinstance(record, dict) else type(record).__name__
            raise RecordError(
                f"The record of {owner!r} must have `predictions` and `targets`. Received: "
                f"{received}. Load a record produced by that metric's `to_record()`."
            )
        self.reset()
        predictions = _tensor_from_record(record["predictions"], torch.device("cpu"))
        targets = _tensor_from_record(record["targets"], torch.device("cpu"))
        if _world()[0] != 0 or predictions.shape[0] == 0:
            return
        self.accumulate(predictions, targets)  # moved to the items' device at the next update

    def align(self, device: torch.device) -> None:
        """Move restored items to `device` (where the next batch lives)."""
        for items in (self.predictions, self.targets):
            items[:] = [t if t.device == device else t.to(device) for t in items]


def _all_gather_rows(
    predictions: torch.Tensor, targets: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The rows of every rank (ranks may hold different numbers of rows, or none)."""
    device = predictions.device
    collective = device if dist.get_backend() == "nccl" else torch.device("cpu")
    wide = torch.float64 if predictions.dtype == torch.float64 else torch.float32
    shape = torch.tensor(list(predictions.shape), device=collective)
    shapes = [torch.zeros_like(shape) for _ in range(dist.get_world_size())]
    dist.all_gather(shapes, shape)
    rows = [int(s[0]) for s in shapes]
    columns = max(int(s[1]) for s in shapes)
    if any(r and int(s[1]) != columns for r, s in zip(rows, shapes)):
        raise ValueError(
            "The ranks' predictions have different numbers of columns: "
            f"{[int(s[1]) for s in shapes]}. Feed every rank outputs with the same classes."
        )
    most = max(rows)
    padded_scores = torch.zeros(most, columns, dtype=wide, device=collective)
    padded_truth = torch.zeros(most, columns, dtype=torch.uint8, device=collective)
    if predictions.shape[0]:
        padded_scores[: predictions.shape[0]] = predictions.to(collective, wide)
        padded_truth[: predictions.shape[0]] = targets.to(collective, torch.uint8)
    all_scores = [torch.empty_like(padded_scores) for _ in rows]
    all_truth = [torch.empty_like(padded_truth) for _ in rows]
    dist.all_gather(all_scores, padded_scores)
    dist.all_gather(all_truth, padded_truth)
    scores = torch.cat([s[:n] for s, n in zip(all_scores, rows)]).to(device)
    truth = torch.cat([t[:n] for t, n in zip(all_truth, rows)]).to(device).bool()
    return scores, truth

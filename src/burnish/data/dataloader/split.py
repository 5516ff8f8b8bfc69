"""`split_dataloader` (Burn: `burn::data::dataloader::split::split_dataloader`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import torch

from burnish.data.dataloader.loader import DataLoader

__all__ = ["split_dataloader"]

O = TypeVar("O")  # noqa: E741 - Burn's name for the batch type


def split_dataloader(
    dataloader: DataLoader[O], devices: Sequence[torch.device | str]
) -> list[DataLoader[O]]:
    """One loader per device, each over a contiguous part of the items (Burn's multi-device
    strategies split the training loader this way).

    With `k = len(devices) > 1`, loader `i` reads the items `[i * step, (i + 1) * step)` of
    the dataset, where `step = num_items // k`; the last one also takes the remainder. Each part
    keeps the loader's batch size, shuffle seed, workers and epoch counter (`slice`), and its
    batches go to its device (`to_device`). With one device the loader itself comes back, as in
    Burn (it keeps its own device).

    Args:
        dataloader: the loader to split; not a shard (`DataLoader.shard`) of one.
        devices: one device per part, e.g. `["cuda:0", "cuda:1"]`.

    Returns:
        The loaders, in the order of `devices`.

    Raises:
        ValueError: if `devices` is empty or the loader is a shard.

    Example:
        >>> parts = split_dataloader(loader, ["cpu", "cpu"])  # 11 items -> 5 and 6
        >>> [part.num_items() for part in parts]
        [5, 6]
    """
    devices = list(devices)
    if not devices:
        raise ValueError(
            "`split_dataloader` needs at least one device. Received: devices=[]. "
            'Pass the devices to split over, e.g. ["cuda:0", "cuda:1"].'
        )
    if len(devices) == 1:
        return [dataloader]
    num_items = dataloader.num_items()
    step = num_items // len(devices)
    bounds = [i * step for i in range(len(devices))] + [num_items]
    return [
        dataloader.slice(bounds[i], bounds[i + 1]).to_device(device)
        for i, device in enumerate(devices)
    ]

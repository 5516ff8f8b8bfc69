"""The cost of resuming inside an epoch, at training step 10^5: from the loader's records to the
first batch after the resume point, as the learner's loop does it (`DataAdapter.resume`, then
`iterate(skip)`).

A cheap dataset (each item its index, a Python call per item) of `steps * batch_size + 1000`
items; the resume point is batch `steps` of the first epoch. Contenders, each shuffled:

  burnish    burnish's `DataLoader`: its record, then `iter(skip=steps)` (indices only)
  stateful   torchdata's `StatefulDataLoader`: its `state_dict()` at the resume point (taken
             beforehand, untimed), `load_state_dict`, then its next batch
  torch      `torch.utils.data.DataLoader`: no record; the first `steps` batches are drawn and
             dropped
  iterable   a sized iterable of batches: likewise drawn and dropped

Each number is the median of `--runs` runs in this process, with the dataset's draws counted.

    .venv/bin/python -m benchmarks.resume_cost [--steps 100000] [--batch-size 1] [--workers 0]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch.utils.data

from burnish.data.dataloader import Batcher, DataLoaderBuilder
from burnish.data.dataset import InMemDataset
from burnish.train.loop.data_adapter import (
    BurnishDataAdapter,
    DataAdapter,
    IterableDataAdapter,
    StatefulDataAdapter,
)


class Indices(torch.utils.data.Dataset):
    """Items 0..n-1, each its index, counting the draws (in this process)."""

    def __init__(self, items: int) -> None:
        self.items, self.draws = items, 0

    def __len__(self) -> int:
        return self.items

    def __getitem__(self, index: int) -> int:
        self.draws += 1
        return index


class IndexBatcher(Batcher):
    """burnish's batches of indices: one tensor."""

    def batch(self, items: list[int], device: torch.device) -> torch.Tensor:
        return torch.tensor(items, device=device)


class Batches:
    """A sized iterable of batches over `Indices` (a generator per epoch)."""

    def __init__(self, dataset: Indices, batch_size: int) -> None:
        self.dataset, self.batch_size = dataset, batch_size

    def __len__(self) -> int:
        return -(-len(self.dataset) // self.batch_size)

    def __iter__(self) -> Iterator[torch.Tensor]:
        order = torch.randperm(len(self.dataset)).tolist()
        for start in range(0, len(order), self.batch_size):
            yield torch.tensor([self.dataset[i] for i in order[start : start + self.batch_size]])


def resumed(adapter: DataAdapter, records: tuple[Any, Any], skip: int) -> tuple[float, Any]:
    """Seconds from the records to the first batch after `skip`, and that batch."""
    began = time.perf_counter()
    adapter.resume(*records, skip)
    batch = next(iter(adapter.iterate(skip)))
    return time.perf_counter() - began, batch


def burnish_case(items: int, batch_size: int, workers: int, steps: int):
    data = [int(i) for i in range(items)]
    loader = (
        DataLoaderBuilder(IndexBatcher())
        .batch_size(batch_size)
        .shuffle(0)
        .num_workers(workers)
        .build(InMemDataset(data))
    )
    adapter = BurnishDataAdapter(loader)
    record = adapter.to_record()
    return adapter, (record, record), None


def stateful_case(items: int, batch_size: int, workers: int, steps: int):
    from torchdata.stateful_dataloader import StatefulDataLoader

    def make() -> StatefulDataLoader:
        dataset = Indices(items)
        return StatefulDataLoader(dataset, batch_size=batch_size, shuffle=True, num_workers=workers)

    straight = StatefulDataAdapter(make())  # the run before the crash: untimed
    start = straight.to_record()
    batches = straight.iterate(0)
    for _ in range(steps):
        next(batches)
    now = straight.to_record()
    del batches
    loader = make()
    return StatefulDataAdapter(loader), (start, now), loader.dataset


def torch_case(items: int, batch_size: int, workers: int, steps: int):
    dataset = Indices(items)
    loader = torch.utils.data.DataLoader(
        dataset, batch_size=batch_size, shuffle=True, num_workers=workers
    )
    return IterableDataAdapter(loader), (None, None), dataset


def iterable_case(items: int, batch_size: int, workers: int, steps: int):
    dataset = Indices(items)
    return IterableDataAdapter(Batches(dataset, batch_size)), (None, None), dataset


CASES: dict[str, Callable[..., Any]] = {
    "burnish": burnish_case,
    "stateful": stateful_case,
    "torch": torch_case,
    "iterable": iterable_case,
}


def measure(name: str, args: argparse.Namespace) -> tuple[float, int | None]:
    """The median seconds of `args.runs` resumes, and the items drawn by one (None: not
    counted, a burnish dataset)."""
    items = args.steps * args.batch_size + 1000
    times, draws = [], None
    for _ in range(args.runs):
        adapter, records, dataset = CASES[name](items, args.batch_size, args.workers, args.steps)
        seconds, batch = resumed(adapter, records, args.steps)
        assert len(batch) == args.batch_size
        times.append(seconds)
        if dataset is not None and args.workers == 0:
            draws = dataset.draws
    return statistics.median(times), draws


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=list(CASES), default=list(CASES))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    print(
        f"resume at step {args.steps}, batch size {args.batch_size}, "
        f"{args.workers} workers, median of {args.runs}"
    )
    print(f"| {'loader':10} | {'seconds':>9} | {'items drawn':>11} |")
    print(f"|{'-' * 12}|{'-' * 10}:|{'-' * 12}:|")
    for name in args.only:
        seconds, draws = measure(name, args)
        shown = "-" if draws is None else f"{draws:,}"
        print(f"| {name:10} | {seconds:9.4f} | {shown:>11} |", flush=True)


if __name__ == "__main__":
    main()

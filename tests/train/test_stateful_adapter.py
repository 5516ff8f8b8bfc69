"""The adapter of torchdata's `StatefulDataLoader`, driven as the learner's loop drives it:
resumed from any batch of any epoch (its records through a checkpoint file), it yields the
batches a straight run yields from there, draws from the dataset only those, and leaves the
random generators as a straight run leaves them."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.data import DataLoader, Dataset
from torchdata.stateful_dataloader import StatefulDataLoader

from burnish.record import DefaultRecorder
from burnish.train.loop.data_adapter import (
    BurnishDataAdapter,
    IterableDataAdapter,
    StatefulDataAdapter,
    data_adapter,
)

from tests.train.helpers import loaders as burnish_loaders

REPO = Path(__file__).resolve().parents[2]


class Counted(Dataset):
    """Items 0..n-1 (as float, so a NaN or huge value passes through), counting the draws."""

    def __init__(self, values: list[float]) -> None:
        self.values, self.draws = values, 0

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, index: int) -> torch.Tensor:
        self.draws += 1
        return torch.tensor([index, self.values[index]], dtype=torch.float64)


def through_a_file(record):
    """`record` written by the checkpoints' recorder and read back."""
    with tempfile.TemporaryDirectory() as directory:
        recorder = DefaultRecorder()
        recorder.record({"loader": record}, Path(directory) / "learner")
        (path,) = Path(directory).iterdir()
        return recorder.load(path)["loader"]


def rows(batch: torch.Tensor) -> list[list[float]]:
    return [[float(x) for x in row] for row in batch]


def straight(make, epochs: int, cut: tuple[int, int | None]):
    """Run `epochs` epochs as the loop does; at `cut` (epoch, batch; None: after the epoch)
    keep the loop's records, the random state, and what follows: the batches and one
    `torch.rand` drawn after each (a model's dropout)."""
    adapter, after, saved = StatefulDataAdapter(make()), [], None
    for epoch in range(epochs):
        start = adapter.to_record()  # the loop's start_epoch
        if saved is None and cut == (epoch, 0):
            saved = start, adapter.to_record(), 0, torch.get_rng_state()
        for k, batch in enumerate(adapter.iterate(0), 1):
            if saved is not None:
                after.append((rows(batch), float(torch.rand(()))))
            else:
                torch.rand(())
            if saved is None and cut == (epoch, k):
                saved = start, adapter.to_record(), k, torch.get_rng_state()
        if saved is None and cut == (epoch, None):
            saved = start, adapter.to_record(), None, torch.get_rng_state()
    return saved, after


def resumed(make, epochs: int, cut: tuple[int, int | None], saved):
    """A fresh loader (another seed) continued from the records as `TrainingState` does."""
    start, now, skip, rng = saved
    torch.manual_seed(12345)
    loader = make()
    adapter = StatefulDataAdapter(loader)
    adapter.resume(through_a_file(start), through_a_file(now), skip)
    torch.set_rng_state(rng)  # the checkpoint's random state, restored after the loaders
    after = []
    first = cut[0] + (skip is None)
    for epoch in range(first, epochs):
        if skip is None or epoch > cut[0]:
            adapter.to_record()  # start_epoch
        for batch in adapter.iterate(skip if epoch == cut[0] else 0):
            after.append((rows(batch), float(torch.rand(()))))
    return after, loader.dataset.draws


@st.composite
def loader_settings(draw):
    shuffle = draw(st.booleans())
    items = draw(st.integers(1 if shuffle else 0, 40))
    value = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(1e308))
    values = draw(st.lists(value, min_size=items, max_size=items))
    batch = draw(st.integers(1, 9))
    drop_last = draw(st.booleans())
    epochs = draw(st.integers(1, 3))
    per_epoch = len(values) // batch if drop_last else -(-len(values) // batch)
    epoch = draw(st.integers(0, epochs - 1))
    k = draw(st.one_of(st.none(), st.integers(0, per_epoch)))
    seed = draw(st.integers(0, 2**31))

    def make():
        return StatefulDataLoader(
            Counted(values), batch_size=batch, shuffle=shuffle, drop_last=drop_last
        )

    return make, seed, epochs, (epoch, k)


@settings(max_examples=60, deadline=None)
@given(loader_settings())
def test_resumed_from_any_batch_it_continues_exactly_and_draws_only_what_follows(case):
    make, seed, epochs, cut = case
    torch.manual_seed(seed)
    saved, expected = straight(make, epochs, cut)
    got, draws = resumed(make, epochs, cut, saved)
    assert len(got) == len(expected)
    for (batch, noise), (want, want_noise) in zip(got, expected):
        torch.testing.assert_close(  # exactly, NaN in place too
            torch.tensor(batch), torch.tensor(want), rtol=0, atol=0, equal_nan=True
        )
        assert noise == want_noise
    assert draws == sum(len(batch) for batch, _ in expected)


def test_an_epoch_cut_short_resumes_with_a_new_epoch():
    """A step budget or early stopping ends an epoch early: the run (resumed with a larger
    budget) goes on with a whole new epoch, as the loop would in the same process."""
    torch.manual_seed(0)
    make = lambda: StatefulDataLoader(Counted([0.0] * 20), batch_size=4, shuffle=True)  # noqa: E731
    adapter = StatefulDataAdapter(make())
    start = adapter.to_record()
    batches = adapter.iterate(0)
    next(batches), next(batches)
    now = adapter.to_record()
    assert now["drawn"] == 2 and not now["ended"]
    expected = [rows(b) for b in adapter.iterate(0)]
    fresh = StatefulDataAdapter(make())
    fresh.resume(through_a_file(start), through_a_file(now), None)
    assert [rows(b) for b in fresh.iterate(0)] == expected
    assert sorted(int(row[0]) for batch in expected for row in batch) == list(range(20))


def test_a_record_of_another_loader_is_refused_with_the_fix():
    burnish_record = burnish_loaders()[0].to_record()
    adapter = StatefulDataAdapter(StatefulDataLoader(Counted([0.0] * 8), batch_size=2))
    with pytest.raises(ValueError, match="not written by a torchdata StatefulDataLoader") as e:
        adapter.resume(burnish_record, burnish_record, 3)
    assert "Resume it with the loader it was trained with" in str(e.value)
    assert "received a record with keys ['" in str(e.value)


def test_a_state_taken_with_other_workers_is_refused_naming_both_counts():
    two = StatefulDataAdapter(StatefulDataLoader(Counted([0.0] * 8), batch_size=2, num_workers=2))
    batches = two.iterate(0)
    next(batches)
    record = two.to_record()
    del batches
    none = StatefulDataAdapter(StatefulDataLoader(Counted([0.0] * 8), batch_size=2))
    with pytest.raises(ValueError, match="num_workers=2, but this StatefulDataLoader has "):
        none.resume(record, record, 1)
    with pytest.raises(ValueError, match="Build the loader with num_workers=2"):
        none.load_record(record)


def test_a_checkpoint_without_loader_state_draws_the_batches_again():
    """A run trained with a plain DataLoader, resumed with a StatefulDataLoader: no state,
    so the loop's skip draws the first batches and drops them, as before."""
    dataset = Counted([0.0] * 12)
    adapter = StatefulDataAdapter(StatefulDataLoader(dataset, batch_size=2))
    adapter.resume(None, None, 2)
    assert [int(b[0][0]) for b in adapter.iterate(2)] == [4, 6, 8, 10]
    assert dataset.draws == 12


def test_each_kind_of_loader_gets_its_adapter():
    stateful = StatefulDataLoader(Counted([0.0] * 4), batch_size=2)
    assert type(data_adapter(stateful)) is StatefulDataAdapter
    assert type(data_adapter(DataLoader(Counted([0.0] * 4), batch_size=2))) is IterableDataAdapter
    assert type(data_adapter(burnish_loaders()[0])) is BurnishDataAdapter
    assert type(data_adapter([1, 2])) is IterableDataAdapter


def test_burnish_never_imports_torchdata_and_works_without_it():
    """torchdata stays optional: burnish does not import it, and with it missing the loaders
    a user without it has are adapted as before."""
    code = (
        "import sys\n"
        "sys.modules['torchdata'] = None  # as if not installed: importing it fails\n"
        "import burnish, burnish.train\n"
        "from burnish.train.loop.data_adapter import data_adapter\n"
        "import torch.utils.data as data\n"
        "adapter = data_adapter(data.DataLoader(list(range(6)), batch_size=2))\n"
        "assert [b.tolist() for b in adapter.iterate(1)] == [[2, 3], [4, 5]]\n"
        "print(type(adapter).__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "IterableDataAdapter"

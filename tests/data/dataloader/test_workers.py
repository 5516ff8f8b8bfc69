"""Worker processes capped at the CPUs the process may use: no torch warning, one log line."""

import logging
import os
import warnings

import pytest
import torch.utils.data

from burnish.data.dataloader import DataLoaderBuilder, loader
from burnish.data.dataset import InMemDataset

from tests.cli.tiny_run import PairBatcher, train_run

TORCH_WARNING = "worker processes in total"


@pytest.fixture
def two_cpus(monkeypatch):
    """The process may run on 2 CPUs, for torch's check and burnish's alike; nothing told yet."""
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this OS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(loader, "_CAPS_TOLD", set())
    assert loader.available_cpus() == 2


def items():
    return InMemDataset([(torch.full((8,), float(i)), i % 3) for i in range(64)])


def test_torch_itself_warns_when_asked_for_more_workers(two_cpus):
    """The setting is real: four workers on two CPUs make torch warn."""
    with pytest.warns(UserWarning, match=TORCH_WARNING):
        torch.utils.data.DataLoader(items(), num_workers=4)


def test_workers_are_capped_silently_and_said_once(two_cpus, caplog):
    builder = DataLoaderBuilder(PairBatcher()).batch_size(16).num_workers(4)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO, "burnish"):
        warnings.simplefilter("always")
        train, valid = builder.shuffle(1).build(items()), builder.build(items())
        for _ in range(2):  # two epochs of two loaders: four torch loaders
            batches = [*train.iter(), *valid.iter()]
    assert len(batches) == 8 and batches[0].features.shape == (16, 8)
    assert [str(w.message) for w in caught if TORCH_WARNING in str(w.message)] == []
    told = [r for r in caplog.records if r.name == "burnish.data"]
    assert [r.getMessage() for r in told] == [
        "Data loader: 4 worker processes were asked for, but this process may run on 2 CPUs, "
        "so it starts 2."
    ]
    assert told[0].levelno == logging.INFO  # not a warning: the terminal stays quiet
    assert train.num_workers == 4  # the setting is kept; only the processes started are capped


def test_no_cap_when_the_machine_has_the_cpus(two_cpus, caplog):
    with caplog.at_level(logging.INFO, "burnish"):
        list(DataLoaderBuilder(PairBatcher()).batch_size(32).num_workers(2).build(items()))
    assert not [r for r in caplog.records if r.name == "burnish.data"]


def test_the_cap_is_in_the_experiment_log(two_cpus, tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = train_run(tmp_path / "run", epochs=1, num_workers=4)
    assert [str(w.message) for w in caught if TORCH_WARNING in str(w.message)] == []
    log = (run / "experiment.log").read_text()
    assert log.count("4 worker processes were asked for") == 1, log

"""`bn.seed` + `.deterministic()` make two runs identical, dropout and shuffling included."""

import torch

import burnish as bn
from burnish.optim import AdamConfig

from tests.train.helpers import Mlp, builder, loaders


def run(artifact_dir, seed):
    bn.seed(seed)
    learner = (
        builder(artifact_dir, epochs=2)
        .deterministic()
        .build(Mlp(dropout=0.5), AdamConfig().init(), 1e-3)
    )
    return learner.fit(*loaders(train_items=256, valid_items=64)).model.state_dict()


def test_two_seeded_deterministic_runs_are_identical(tmp_path):
    first, second = run(tmp_path / "a", 4), run(tmp_path / "b", 4)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert (tmp_path / "a/train/epoch-2/Loss.log").read_bytes() == (
        tmp_path / "b/train/epoch-2/Loss.log"
    ).read_bytes()
    other = run(tmp_path / "c", 5)
    assert not all(torch.equal(first[k], other[k]) for k in first)
    assert not torch.are_deterministic_algorithms_enabled()  # restored after fit

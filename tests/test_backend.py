import random

import numpy as np
import pytest
import torch

import burnish as bn


def test_seed_makes_every_rng_repeat():
    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    bn.seed(7)
    first = draw()
    bn.seed(7)
    assert draw() == first
    bn.seed(8)
    assert draw() != first


@pytest.mark.parametrize("bad", [-1, 2**32, 1.5, "1", True])
def test_seed_rejects_bad_values(bad):
    with pytest.raises(ValueError, match=r"`seed` must be an integer in \[0, 2\*\*32\)"):
        bn.seed(bad)


def test_device_parsing():
    assert bn.device("cpu") == torch.device("cpu")
    assert bn.device(torch.device("cpu")) == torch.device("cpu")
    assert bn.device("cuda:1").index == 1
    with pytest.raises(ValueError, match="Unknown device 'gpu0'"):
        bn.device("gpu0")

import random

import numpy as np
import pytest
import torch

import burnish as bn
from burnish.backend import available_devices, check_device


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


# -- a device this machine does not have fails at `build`, in one message ------------------


def _build_on(tmp_path, spec):
    from burnish.optim import AdamConfig
    from burnish.train import LearnerBuilder

    builder = LearnerBuilder(tmp_path).devices([bn.device(spec)])  # parsing is not the check
    return builder.build(torch.nn.Linear(2, 2), AdamConfig().init(), 1e-3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
@pytest.mark.parametrize("spec", ["cuda", "cuda:7"])
def test_cuda_without_cuda_fails_at_build_naming_the_device_and_the_fix(tmp_path, spec):
    with pytest.raises(ValueError, match=rf"Device '{spec}' is not available: this torch") as info:
        _build_on(tmp_path, spec)
    message = str(info.value)
    assert "Available: cpu" in message
    assert "bn.device('cpu')" in message and "leave `.devices` out" in message


def test_mps_where_there_is_none_fails_at_build(tmp_path):
    if "mps" in available_devices():
        pytest.skip("MPS is available here")
    with pytest.raises(ValueError, match=r"Device 'mps' is not available: .*Available: cpu"):
        _build_on(tmp_path, "mps")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_a_cuda_index_out_of_range_fails_at_build(tmp_path):
    count = torch.cuda.device_count()
    with pytest.raises(ValueError, match=rf"'cuda:{count}' does not exist: index {count} but "):
        _build_on(tmp_path, f"cuda:{count}")
    _build_on(tmp_path, "cuda:0")  # an existing one builds


def test_available_devices_start_with_the_cpu():
    devices = available_devices()
    assert devices[0] == "cpu"
    assert len([d for d in devices if d.startswith("cuda:")]) == (
        torch.cuda.device_count() if torch.cuda.is_available() else 0
    )
    _ = [check_device(bn.device(d)) for d in devices]  # each one passes the check


@pytest.mark.parametrize("given", ["cpu", torch.device("cpu")])
def test_devices_given_one_device_instead_of_a_list_says_so(tmp_path, given):
    """`.devices("cpu")` counted the string's 3 characters as 3 devices (a trial's finding)."""
    from burnish.train import LearnerBuilder

    with pytest.raises(TypeError, match=r"takes a list of devices.*\.devices\(\['cpu'\]\)"):
        LearnerBuilder(tmp_path).devices(given)

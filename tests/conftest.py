"""Test-wide set-up: datasets come from the copy of MNIST kept in the repo (data/mnist)."""

import os
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@pytest.fixture
def repo_root() -> Path:
    return REPO


@pytest.fixture
def one_torch_thread():
    """One intra-op thread for the test (counts and timings alike), restored afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)

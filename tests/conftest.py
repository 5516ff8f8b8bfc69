"""Test-wide set-up: datasets come from the copy of MNIST kept in the repo (data/mnist)."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("BURNISH_DATASETS", str(REPO / "data"))
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@pytest.fixture
def repo_root() -> Path:
    return REPO

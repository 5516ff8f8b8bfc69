"""Fixtures of the command-line tests: real training runs, shared read-only; Chromium."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.cli.tiny_run import train_run


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A finished run: logs of 3 epochs, checkpoints, config.json and model.mpk. Read only."""
    return train_run(tmp_path_factory.mktemp("cli") / "run")


@pytest.fixture(scope="session")
def constant_lr_run_dir(tmp_path_factory) -> Path:
    """A finished run that logs `LearningRateMetric` at a constant 0.1 (docs/learner.md's
    example): its epoch means differ from 0.1 by float rounding only. Read only."""
    directory = tmp_path_factory.mktemp("cli") / "constant-lr"
    return train_run(directory, learning_rate=0.1, learning_rate_metric=True)


@pytest.fixture(scope="session")
def other_run_dir(tmp_path_factory) -> Path:
    """A second finished run to compare with `run_dir`: 2 epochs, another learning rate and
    hidden size, `LearningRateMetric` logged too, and an evaluation "Held out". Read only."""
    directory = tmp_path_factory.mktemp("cli") / "other"
    return train_run(
        directory, epochs=2, learning_rate=0.05, hidden_size=8, learning_rate_metric=True,
        evaluation="Held out",
    )  # fmt: skip


@pytest.fixture(scope="session")
def chromium_binary() -> str:
    """The headless browser the report pages are checked in (skipped without it, off CI)."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed: .ci/run installs Debian's `chromium`.")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return binary
